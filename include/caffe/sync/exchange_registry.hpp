// The exchange methods by SyncParameter.Method. Each method's file registers the class
// that implements it (REGISTER_EXCHANGE, as REGISTER_LAYER_CLASS does for layers), and
// CreateGradientExchange builds the one sync_param.method names; the framework names no
// method. The methods live in the exchanges part (src/caffe/exchanges), linked whole
// so that the linker keeps registrations nothing else refers to.
// docs/writing_an_exchange.md walks through adding one.
#ifndef CAFFE_SYNC_EXCHANGE_REGISTRY_HPP_
#define CAFFE_SYNC_EXCHANGE_REGISTRY_HPP_

#include <functional>
#include <memory>
#include <vector>

#include "caffe/proto/caffe.pb.h"
#include "caffe/sync/gradient_exchange.hpp"
#include "caffe/sync/transport.hpp"

namespace caffe {

class ExchangeRegistry {
 public:
  using Creator = std::function<std::unique_ptr<GradientExchange>(const SyncParameter&, Transport)>;
  // Registers the class that implements `method`; a second one for the same method is
  // a bug (it would make the choice depend on link order) and aborts.
  static void Add(SyncParameter::Method method, const char* class_name, Creator creator);
  // Builds the exchange for param.method(); throws caffe::Error naming the method when
  // none is registered.
  static std::unique_ptr<GradientExchange> Create(const SyncParameter& param, Transport transport);
  // The methods that have an exchange, in enum order.
  static std::vector<SyncParameter::Method> Methods();
};

template <typename Exchange>
struct ExchangeRegisterer {
  ExchangeRegisterer(SyncParameter::Method method, const char* class_name) {
    ExchangeRegistry::Add(method, class_name, [](const SyncParameter& param, Transport transport) {
      return std::unique_ptr<GradientExchange>(new Exchange(param, std::move(transport)));
    });
  }
};

// In the method's .cpp: REGISTER_EXCHANGE(RANDOMK, RandomkExchange);
#define REGISTER_EXCHANGE(method, Class)                                    \
  static ::caffe::ExchangeRegisterer<Class> g_exchange_registerer_##method( \
      ::caffe::SyncParameter::method, #Class)

}  // namespace caffe

#endif  // CAFFE_SYNC_EXCHANGE_REGISTRY_HPP_
