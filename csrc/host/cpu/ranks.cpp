#include "cpu/ranks.h"

#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

namespace purlin::cpu {

namespace {
constexpr size_t kRegionAlign = 64;
}  // namespace

// One rank's executor: its own epochs and failure state; its peers' memory is
// the other ranks' regions of the communicator.
class RankCommunicator::Rank : public Executor {
 public:
  Rank(Plan plan, Options options, int64_t rank) : Executor(std::move(plan), std::move(options)), rank_(rank) {}

  size_t bytes() const { return region_bytes(); }

  // Lays out every rank's region (bases[r] is rank r's); this rank's own is
  // constructed here, in zeroed bytes, before any rank runs.
  void attach(const std::vector<unsigned char*>& bases) {
    for (int64_t r = 0; r < world(); ++r) memory_[r] = region(bases[r], r, r == rank_);
  }

  void run(const void* input, void* output) { run_rank(rank_, input, output); }

 private:
  int64_t rank_;
};

void RankCommunicator::Free::operator()(unsigned char* p) const {
  ::operator delete[](p, std::align_val_t(kRegionAlign));
}

RankCommunicator::RankCommunicator(Plan plan, Options options) {
  if (plan.symmetric)
    throw std::invalid_argument(options.name + ": the plan is symmetric (its peers read and write the ranks' "
                                "buffers in place), which ranks called one by one with their own buffers cannot "
                                "serve; compile it without symmetric=True");
  for (int64_t r = 0; r < plan.world; ++r) ranks_.push_back(std::make_unique<Rank>(plan, options, r));
  const size_t bytes = ranks_[0]->bytes();
  std::vector<unsigned char*> bases;
  for (int64_t r = 0; r < plan.world; ++r) {
    regions_.emplace_back(static_cast<unsigned char*>(::operator new[](bytes, std::align_val_t(kRegionAlign))));
    std::memset(regions_.back().get(), 0, bytes);
    bases.push_back(regions_.back().get());
  }
  for (auto& r : ranks_) r->attach(bases);
}

// The ranks go before the regions their memory points into.
RankCommunicator::~RankCommunicator() { ranks_.clear(); }

RankCommunicator::Rank& RankCommunicator::rank(int64_t r) const {
  if (r < 0 || r >= static_cast<int64_t>(ranks_.size()))
    throw std::out_of_range("rank " + std::to_string(r) + " is outside world " + std::to_string(ranks_.size()));
  return *ranks_[r];
}

void RankCommunicator::run(int64_t r, const void* input, void* output) { rank(r).run(input, output); }

int64_t RankCommunicator::world() const { return static_cast<int64_t>(ranks_.size()); }
int64_t RankCommunicator::input_bytes(int64_t r) const { return rank(r).input_bytes(r); }
int64_t RankCommunicator::output_bytes(int64_t r) const { return rank(r).output_bytes(r); }
int64_t RankCommunicator::epoch(int64_t r) const { return rank(r).epoch(r); }

}  // namespace purlin::cpu
