// The exchange registry: every SyncParameter.Method has exactly one exchange, built by
// CreateGradientExchange from the method's own file (REGISTER_EXCHANGE), and a method
// without one is an error naming it, not a crash.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "caffe/sync/exchange_registry.hpp"
#include "caffe/sync/local_communicator.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

TEST(ExchangeRegistryTest, EveryMethodHasItsExchange) {
  const auto* methods = SyncParameter::Method_descriptor();
  ASSERT_EQ(ExchangeRegistry::Methods().size(), static_cast<size_t>(methods->value_count()));
  for (int i = 0; i < methods->value_count(); ++i) {
    const auto method = static_cast<SyncParameter::Method>(methods->value(i)->number());
    SyncParameter param;
    param.set_method(method);
    auto exchange = CreateGradientExchange(param, std::make_shared<LocalCommunicator>());
    ASSERT_NE(exchange, nullptr) << methods->value(i)->name();
    EXPECT_EQ(std::string(exchange->method_name()), methods->value(i)->name());
  }
}

TEST(ExchangeRegistryTest, AMethodWithoutAnExchangeIsAnErrorNamingIt) {
  SyncParameter param;
  param.set_method(static_cast<SyncParameter::Method>(99));
  const std::string what = ErrorOf(
      [&] { ExchangeRegistry::Create(param, Transport(std::make_shared<LocalCommunicator>())); });
  EXPECT_NE(what.find("sync_param.method 99 has no exchange registered"), std::string::npos)
      << what;
}

TEST(ExchangeRegistryDeathTest, RegisteringAMethodTwiceAborts) {
  EXPECT_DEATH(ExchangeRegistry::Add(SyncParameter::RANDOMK, "Another",
                                     [](const SyncParameter&, Transport) {
                                       return std::unique_ptr<GradientExchange>();
                                     }),
               "RANDOMK registered twice: RandomkExchange and Another");
}

}  // namespace
}  // namespace caffe
