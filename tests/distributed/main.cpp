// Main of test_distributed: runs under `mpirun -np N` (ctest: test_distributed_np2).
// Initialises the process group, runs every test on every rank (each test is a
// collective sequence, so all ranks must run the same tests in the same order), and
// prints only on rank 0 (rank 0's failures; another rank's failure shows as its exit
// status, which mpirun reports, and in its own message on stderr).
#include <gtest/gtest.h>

#include <iostream>

#include "tandem/distributed/process_group.h"

namespace {
// Prints failures of a rank other than 0, prefixed with the rank.
class RankFailurePrinter : public testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const testing::TestPartResult& r) override {
    if (r.failed())
      std::cerr << "[rank " << rank_ << "] " << (r.file_name() ? r.file_name() : "?") << ":" << r.line_number() << ": "
                << r.summary() << "\n";
  }

 private:
  int rank_;
};
}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  tandem::distributed::init_process_group();
  const int rank = tandem::distributed::rank();
  if (rank != 0) {
    auto& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));
  }
  const int rc = RUN_ALL_TESTS();
  tandem::distributed::finalize();
  return rc;
}
