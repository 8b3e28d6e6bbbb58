#include "caffe/exchanges/randomk_exchange.hpp"

#include <chrono>
#include <cmath>

#include "caffe/sync/exchange_registry.hpp"
#include "caffe/sync/shared_random.hpp"

namespace caffe {

int64_t RandomkExchange::ExchangeSparse(int iter, const vector<Blob*>& params, float density) {
  const auto start = std::chrono::steady_clock::now();
  vector<Selection> selections(params.size());
  for (size_t b = 0; b < params.size(); ++b) {
    if (IsDenseBlob(b)) {
      selections[b].all = true;
      continue;
    }
    const int64_t n = params[b]->count();
    const int64_t k = std::max<int64_t>(1, static_cast<int64_t>(std::llround(density * n)));
    selections[b].indices =
        SharedRandomSubset(param_.seed(), iter, static_cast<int64_t>(b), n, k, 0x7a4d0full);
  }
  stats_.AddTime(ExchangeStats::SELECT,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  const int64_t sent = ReduceSelected(params, selections);
  for (size_t b = 0; b < params.size(); ++b) {
    BlobSelection s;
    s.name = BlobName(b);
    s.elements = params[b]->count();
    s.sent = selections[b].all ? s.elements : static_cast<int64_t>(selections[b].indices.size());
    stats_.AddBlob(s);
  }
  return sent;
}

REGISTER_EXCHANGE(RANDOMK, RandomkExchange);

}  // namespace caffe
