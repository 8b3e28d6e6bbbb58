// Linked with one part's whole archive and only the parts below it (CMakeLists.txt,
// caffe_part): the program does nothing, but it links only if that part calls
// nothing above it.
int main() { return 0; }
