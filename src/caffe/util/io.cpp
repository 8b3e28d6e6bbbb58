#include "caffe/util/io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/text_format.h>

#include <glog/logging.h>

#include "caffe/util/error.hpp"

namespace caffe {

namespace {

// Keeps the first parse error with its position, for a one-line message.
class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (!has_error_) {
      has_error_ = true;
      line_ = line + 1;  // protobuf counts from zero
      column_ = column + 1;
      message_ = message;
    }
  }
  void AddWarning(int, google::protobuf::io::ColumnNumber, const std::string&) override {}

  bool has_error_ = false;
  int line_ = 0;
  int column_ = 0;
  std::string message_;
};

}  // namespace

bool FileExists(const std::string& filename) {
  struct stat st;
  return ::stat(filename.c_str(), &st) == 0;
}

std::string ReadFileToString(const std::string& filename) {
  std::ifstream in(filename, std::ios::binary);
  CAFFE_REQUIRE(in.good()) << filename << ": cannot open file (" << std::strerror(errno) << ")";
  std::ostringstream buffer;
  buffer << in.rdbuf();
  CAFFE_REQUIRE(!in.bad()) << filename << ": read error";
  return buffer.str();
}

void ParseProtoFromText(const std::string& text, const std::string& source_name,
                        Message* proto) {
  google::protobuf::TextFormat::Parser parser;
  FirstErrorCollector errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, proto)) {
    ErrorBuilder() << source_name << ":" << errors.line_ << ":" << errors.column_ << ": "
                   << errors.message_ << " (while parsing " << proto->GetTypeName() << ")";
  }
}

void ReadProtoFromTextFile(const std::string& filename, Message* proto) {
  ParseProtoFromText(ReadFileToString(filename), filename, proto);
}

void ReadProtoFromBinaryFile(const std::string& filename, Message* proto) {
  const std::string bytes = ReadFileToString(filename);
  google::protobuf::io::ArrayInputStream array(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream coded(&array);
  // Weight files of large nets exceed protobuf's 64 MB default limit.
  coded.SetTotalBytesLimit(INT32_MAX);
  const bool ok = proto->ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
  CAFFE_REQUIRE(ok) << filename << ": not a valid " << proto->GetTypeName()
                    << " (truncated or corrupt binary protobuf, " << bytes.size() << " bytes)";
}

void WriteFileAtomically(const std::string& filename, const std::string& bytes) {
  const std::string temp = filename + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CAFFE_REQUIRE(fd >= 0) << temp << ": cannot create file (" << std::strerror(errno) << ")";
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(temp.c_str());
      ErrorBuilder() << filename << ": write failed (" << std::strerror(err) << ")";
    }
    written += static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced || ::rename(temp.c_str(), filename.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    ErrorBuilder() << filename << ": could not be written (" << std::strerror(err) << ")";
  }
  // The rename itself is durable only once the folder is flushed; without this a
  // power cut could bring back neither the old nor the new name. Best effort: some
  // file systems refuse to open or sync a folder.
  const size_t slash = filename.find_last_of('/');
  const std::string folder = slash == std::string::npos ? "." : filename.substr(0, slash + 1);
  const int dir_fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

void WriteProtoToTextFile(const Message& proto, const std::string& filename) {
  std::string text;
  CHECK(google::protobuf::TextFormat::PrintToString(proto, &text));
  WriteFileAtomically(filename, text);
}

void WriteProtoToBinaryFile(const Message& proto, const std::string& filename) {
  std::string bytes;
  CHECK(proto.SerializeToString(&bytes)) << "serialising " << proto.GetTypeName();
  WriteFileAtomically(filename, bytes);
}

}  // namespace caffe
