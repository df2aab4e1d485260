// Helpers shared by the core tests: running a program in a fresh process with
// a controlled environment, parsing axl_probe's key=value output, temporary
// folders, and status/message assertions.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "axl/axl.hpp"

extern char** environ;

namespace axltest {

namespace fs = std::filesystem;

// Removes every AXL_* variable from this process's environment. In-process
// tests call it before the first axl call (discovery reads the environment
// once), so a developer's AXL_PLUGINS or AXL_VIRTUAL_DEVICES cannot change
// what they see.
inline void clear_axl_env() {
  std::vector<std::string> names;
  for (char** e = environ; *e; ++e)
    if (strncmp(*e, "AXL_", 4) == 0) names.emplace_back(*e, strcspn(*e, "="));
  for (auto& n : names) unsetenv(n.c_str());
}

// ------------------------------------------------------------- temp folders --
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "axl_core_test_XXXXXX").string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed");
    path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  std::string str() const { return path_.string(); }
  // Copies `file` into the folder (or `sub` below it); returns the new path.
  std::string add(const std::string& file, const std::string& sub = "") const {
    fs::path dir = sub.empty() ? path_ : path_ / sub;
    fs::create_directories(dir);
    fs::path to = dir / fs::path(file).filename();
    fs::copy_file(file, to, fs::copy_options::overwrite_existing);
    return to.string();
  }

 private:
  fs::path path_;
};

// ------------------------------------------------------------ child processes --
struct RunResult {
  int exit_code = -1;     // exit status, or -1 if killed / timed out
  int signal = 0;         // terminating signal, 0 if none
  bool timed_out = false;
  std::string out, err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs argv[0] with `env_set` on top of the current environment minus every
// AXL_* variable, in `cwd` (empty: inherit). Kills it after `timeout_s`.
inline RunResult run(const std::vector<std::string>& argv,
                     const std::vector<std::pair<std::string, std::string>>& env_set = {},
                     const std::string& cwd = "", int timeout_s = 60) {
  // A variable in env_set replaces the inherited one (getenv would find the
  // first of two entries).
  auto overridden = [&](const char* e) {
    for (auto& kv : env_set)
      if (strncmp(e, kv.first.c_str(), kv.first.size()) == 0 && e[kv.first.size()] == '=')
        return true;
    return false;
  };
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (strncmp(*e, "AXL_", 4) != 0 && !overridden(*e)) env.emplace_back(*e);
  for (auto& [k, v] : env_set) env.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  TempDir io;
  std::string out_path = (io.path() / "out").string(), err_path = (io.path() / "err").string();
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  // glibc >= 2.29; the child starts in `cwd` so relative paths resolve there.
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
  pid_t pid = -1;
  int rc = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  RunResult r;
  if (rc != 0) {
    r.err = std::string("posix_spawn failed: ") + strerror(rc);
    return r;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int st = 0;
  while (true) {
    pid_t w = waitpid(pid, &st, WNOHANG);
    if (w == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!r.timed_out) {
    if (WIFEXITED(st)) r.exit_code = WEXITSTATUS(st);
    if (WIFSIGNALED(st)) r.signal = WTERMSIG(st);
  }
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  return r;
}

// A sanitizer report in a child's stderr (a forked grandchild that _exits
// keeps exit status 0 even after a report, so the text is checked too).
inline bool sanitizer_report(const std::string& err) {
  return err.find("Sanitizer") != std::string::npos ||
         err.find("runtime error:") != std::string::npos;
}

// ------------------------------------------------------------ probe output --
class KV {
 public:
  explicit KV(const std::string& text) {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      size_t eq = line.find('=');
      if (eq == std::string::npos) continue;
      m_[line.substr(0, eq)] = line.substr(eq + 1);
    }
  }
  bool has(const std::string& k) const { return m_.count(k) != 0; }
  // The value, or "<missing KEY>" so a failed check shows what was absent.
  std::string operator[](const std::string& k) const {
    auto it = m_.find(k);
    return it == m_.end() ? "<missing " + k + ">" : it->second;
  }
  int num(const std::string& k) const {
    auto it = m_.find(k);
    return it == m_.end() ? -1 : std::atoi(it->second.c_str());
  }
  const std::map<std::string, std::string>& all() const { return m_; }

  // Plugin records ("plugin.N." or "after.plugin.N.").
  struct Record {
    int index = -1;
    std::string path, name, version, state, status, reason;
    int devices = 0;
  };
  std::vector<Record> records(const std::string& prefix = "") const {
    std::vector<Record> out;
    int n = num(prefix + "plugins");
    for (int i = 0; i < n; ++i) {
      std::string p = prefix + "plugin." + std::to_string(i) + ".";
      Record r;
      r.index = i;
      r.path = (*this)[p + "path"];
      r.name = (*this)[p + "name"];
      r.version = (*this)[p + "version"];
      r.state = (*this)[p + "state"];
      r.status = (*this)[p + "status"];
      r.reason = (*this)[p + "reason"];
      r.devices = num(p + "devices");
      out.push_back(r);
    }
    return out;
  }
  // The record whose file name is `file` (basename), or index -1.
  Record by_file(const std::string& file, const std::string& prefix = "") const {
    std::vector<Record> hits;
    for (auto& r : records(prefix))
      if (fs::path(r.path).filename() == file) hits.push_back(r);
    if (hits.size() == 1) return hits[0];
    return Record{};
  }
  Record by_path(const std::string& path, const std::string& prefix = "") const {
    for (auto& r : records(prefix))
      if (r.path == path) return r;
    return Record{};
  }
  size_t count_file(const std::string& file, const std::string& prefix = "") const {
    size_t n = 0;
    for (auto& r : records(prefix))
      if (fs::path(r.path).filename() == file) ++n;
    return n;
  }
  // Keys "dev.<label>.<k>.*" of the probe's work mode whose backend is `b`:
  // returns the key prefix, or "" if none.
  std::string device_key(const std::string& label, const std::string& backend) const {
    for (int k = 0; k < 64; ++k) {
      std::string p = "dev." + label + "." + std::to_string(k);
      if (!has(p + ".get")) break;
      if ((*this)[p + ".backend"] == backend) return p;
    }
    return "";
  }
  bool mapped(const std::string& path) const {
    int n = num("mapped_count");
    for (int i = 0; i < n; ++i)
      if ((*this)["mapped." + std::to_string(i)] == path) return true;
    return false;
  }
  bool mapped_file(const std::string& file) const {
    int n = num("mapped_count");
    for (int i = 0; i < n; ++i)
      if (fs::path((*this)["mapped." + std::to_string(i)]).filename() == file) return true;
    return false;
  }
  std::string discovery_log() const {
    std::string s;
    for (int i = 0; has("discovery." + std::to_string(i)); ++i)
      s += (*this)["discovery." + std::to_string(i)] + "\n";
    return s;
  }

 private:
  std::map<std::string, std::string> m_;
};

inline bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

// ------------------------------------------------------------ error checks --
// Runs `body`, which must throw axl::Error with `status` and a message that
// contains every string in `parts`.
template <typename F>
void require_error(F&& body, axl_status status, std::initializer_list<std::string> parts) {
  try {
    body();
  } catch (const axl::Error& e) {
    INFO("status " << e.status_name() << ", message: " << e.what());
    CHECK(e.status() == status);
    for (auto& p : parts) CHECK_THAT(std::string(e.what()), Catch::Contains(p));
    return;
  }
  FAIL("expected axl::Error " << axl_status_name(status) << ", nothing was thrown");
}

// The C-API form: `s` is the returned status; the last error must agree.
inline void require_status(axl_status s, axl_status expected,
                           std::initializer_list<std::string> parts) {
  axl_error_info e{};
  e.struct_size = sizeof e;
  REQUIRE(axl_last_error(&e) == AXL_SUCCESS);
  std::string msg = e.message ? e.message : "";
  INFO("returned " << axl_status_name(s) << ", last error " << axl_status_name(e.status)
                   << ": " << msg);
  CHECK(s == expected);
  CHECK(e.status == expected);
  for (auto& p : parts) CHECK_THAT(msg, Catch::Contains(p));
}

// Polls `done` until it holds or `timeout` passes: for effects the core
// completes on a background thread (deferred frees run after the queues
// that used a buffer finish). Returns the last result.
template <typename F>
bool eventually(F&& done, std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= end) return done();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace axltest
