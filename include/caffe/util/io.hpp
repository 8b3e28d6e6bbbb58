// Reading and writing protobuf files. Text parsing reports file:line:column; binary
// reading rejects truncated or corrupt files; every write is atomic (temporary file,
// fsync, rename), so a crash mid-write leaves the previous file intact.
#ifndef CAFFE_UTIL_IO_HPP_
#define CAFFE_UTIL_IO_HPP_

#include <string>

#include <google/protobuf/message.h>

namespace caffe {

using google::protobuf::Message;

// Throw caffe::Error naming the file (and line:column for text) on any failure.
void ReadProtoFromTextFile(const std::string& filename, Message* proto);
void ReadProtoFromBinaryFile(const std::string& filename, Message* proto);
// Parses text already in memory; `source_name` appears in error messages.
void ParseProtoFromText(const std::string& text, const std::string& source_name,
                        Message* proto);

void WriteProtoToTextFile(const Message& proto, const std::string& filename);
void WriteProtoToBinaryFile(const Message& proto, const std::string& filename);

// Writes bytes to `filename` atomically: temp file in the same folder, fsync, rename.
void WriteFileAtomically(const std::string& filename, const std::string& bytes);
bool FileExists(const std::string& filename);
std::string ReadFileToString(const std::string& filename);

}  // namespace caffe

#endif  // CAFFE_UTIL_IO_HPP_
