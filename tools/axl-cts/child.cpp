// Starting this program again as a child: the negotiation probe and the
// fault-injection scenarios need a fresh process each (a plugin remembers its
// host, discovery runs once per process, an injected fault must not leak into
// the parent).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "cts.hpp"

extern char** environ;

namespace cts {

namespace {

// Descriptors far above 0..3, so a dup2 onto 1, 2 or 3 never meets itself
// (dup2 of a descriptor onto itself would keep its close-on-exec flag).
int high_fd(int fd) {
  const int h = fcntl(fd, F_DUPFD_CLOEXEC, 10);
  close(fd);
  return h;
}

}  // namespace

std::string signal_text(int sig) {
  const char* d = strsignal(sig);
  return cat("signal ", sig, d ? cat(" (", d, ")") : std::string());
}

ChildResult run_self(const std::vector<std::string>& args,
                     const std::vector<std::pair<std::string, std::string>>& env, int timeout_s) {
  ChildResult r;
  int proto[2], chat[2];
  if (pipe(proto) != 0) {
    r.error = cat("cannot create a pipe: ", std::strerror(errno));
    return r;
  }
  if (pipe(chat) != 0) {
    r.error = cat("cannot create a pipe: ", std::strerror(errno));
    close(proto[0]);
    close(proto[1]);
    return r;
  }
  for (int* p : {&proto[0], &proto[1], &chat[0], &chat[1]}) *p = high_fd(*p);

  // The environment is built before posix_spawn: nothing that allocates may
  // run between fork and exec in a process that has other threads.
  std::vector<std::string> env_text;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    bool replaced = false;
    for (const auto& [k, v] : env) replaced = replaced || k == key;
    if (!replaced) env_text.push_back(kv);
  }
  for (const auto& [k, v] : env)
    if (!v.empty()) env_text.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_text) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_text = {options().self_exe};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_text) argv.push_back(s.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, chat[1], 1);
  posix_spawn_file_actions_adddup2(&fa, chat[1], 2);
  posix_spawn_file_actions_adddup2(&fa, proto[1], kChildProtocolFd);
  pid_t pid = -1;
  const int rc =
      posix_spawn(&pid, options().self_exe.c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  close(proto[1]);
  close(chat[1]);
  if (rc != 0) {
    close(proto[0]);
    close(chat[0]);
    r.error = cat("cannot start ", options().self_exe, ": ", std::strerror(rc));
    return r;
  }

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  pollfd fds[2] = {{proto[0], POLLIN, 0}, {chat[0], POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      r.timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    if (poll(fds, 2, static_cast<int>(left)) < 0 && errno != EINTR) break;
    for (pollfd& p : fds) {
      if (p.fd < 0 || !(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      const ssize_t n = read(p.fd, buf, sizeof buf);
      if (n <= 0) {
        close(p.fd);
        p.fd = -1;
        --open_fds;
        continue;
      }
      (p.fd == proto[0] ? r.protocol : r.output).append(buf, static_cast<size_t>(n));
    }
  }
  for (pollfd& p : fds)
    if (p.fd >= 0) close(p.fd);
  while (waitpid(pid, &r.status, 0) < 0 && errno == EINTR) {}
  return r;
}

}  // namespace cts
