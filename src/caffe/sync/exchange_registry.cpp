#include "caffe/sync/exchange_registry.hpp"

#include <glog/logging.h>

#include <map>
#include <string>
#include <utility>

#include "caffe/util/error.hpp"

namespace caffe {

namespace {

struct Entry {
  std::string class_name;
  ExchangeRegistry::Creator creator;
};

// Built on first use: registrations run from static initialisers in other files, in
// an order the language leaves open.
std::map<SyncParameter::Method, Entry>& Entries() {
  static std::map<SyncParameter::Method, Entry> entries;
  return entries;
}

}  // namespace

void ExchangeRegistry::Add(SyncParameter::Method method, const char* class_name, Creator creator) {
  auto [it, added] = Entries().emplace(method, Entry{class_name, std::move(creator)});
  CHECK(added) << "sync_param.method " << SyncParameter::Method_Name(method)
               << " registered twice: " << it->second.class_name << " and " << class_name;
}

std::unique_ptr<GradientExchange> ExchangeRegistry::Create(const SyncParameter& param,
                                                           Transport transport) {
  const auto it = Entries().find(param.method());
  if (it == Entries().end()) {
    ErrorBuilder() << "sync_param.method "
                   << (SyncParameter::Method_IsValid(param.method())
                           ? SyncParameter::Method_Name(param.method())
                           : std::to_string(static_cast<int>(param.method())))
                   << " has no exchange registered (REGISTER_EXCHANGE in its file, "
                   << "src/caffe/exchanges)";
  }
  return it->second.creator(param, std::move(transport));
}

std::vector<SyncParameter::Method> ExchangeRegistry::Methods() {
  std::vector<SyncParameter::Method> methods;
  for (const auto& entry : Entries()) methods.push_back(entry.first);
  return methods;
}

}  // namespace caffe
