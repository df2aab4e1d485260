// The JSON timeline's path placeholders (AXL_PROFILE_OUTPUT,
// axl_profile_set_output): `{rank}` and `{pid}`, so that the ranks of one
// MPI job (or any processes started with one environment) write one file
// each instead of overwriting one another's.
#include <unistd.h>

#include <cctype>
#include <string>
#include <string_view>

#include "internal.hpp"
#include "profile.hpp"

namespace axl::core {
namespace {

// The launchers' rank variables, most specific first: Open MPI's mpirun,
// then the PMI ones (MPICH/Hydra, Intel MPI), then Slurm's srun (which also
// starts ranks without an MPI launcher).
constexpr const char* kRankVariables[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"};

// Only a decimal number is taken as a rank: the value becomes part of a path,
// so a malformed one must not add separators or "..".
bool is_rank(const char* v) {
  if (!v || !*v) return false;
  for (const char* p = v; *p; ++p)
    if (!isdigit(static_cast<unsigned char>(*p))) return false;
  return true;
}

std::string process_rank() {
  for (const char* name : kRankVariables)
    if (const char* v = env(name); is_rank(v)) return v;
  return std::to_string(getpid());  // not under a launcher: one file per process
}

}  // namespace

std::string profile_expand_output(std::string_view path) {
  static constexpr std::string_view kRank = "{rank}", kPid = "{pid}";
  std::string out;
  out.reserve(path.size());
  for (size_t i = 0; i < path.size();) {
    if (path.substr(i, kRank.size()) == kRank) {
      out += process_rank();
      i += kRank.size();
    } else if (path.substr(i, kPid.size()) == kPid) {
      out += std::to_string(getpid());
      i += kPid.size();
    } else {
      out += path[i++];  // any other brace is part of the name
    }
  }
  return out;
}

}  // namespace axl::core
