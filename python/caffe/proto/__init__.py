"""Generated protobuf classes of proto/caffe.proto (caffe_pb2 is written by the build)."""
