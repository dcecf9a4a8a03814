// Store over c10d's HashStore / TCPStore / PrefixStore.
#include "dist/store.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/version.h>

#include "dist/communicator.h"
#include "dist/detail.h"

namespace tv::dist {

namespace {

// torch's TCPStore serves through libuv by default from 2.4, and a LibTorch built without it
// (Debian's) refuses that: USE_LIBUV=0 asks for the classic server, as it does in torch's Python.
[[maybe_unused]] bool use_libuv(bool torch_default) {
  const char* v = std::getenv("USE_LIBUV");
  if (!v || !*v) return torch_default;
  return std::string(v) != "0";
}

// c10d's HashStore whose waits end when the store is aborted.
class AbortableHashStore : public c10d::HashStore {
 public:
  void abort(const std::string& reason) {
    {
      std::lock_guard<std::mutex> lock(m_);
      if (!aborted_) reason_ = reason;
      aborted_ = true;
    }
    cv_.notify_all();
  }
  bool aborted() {
    std::lock_guard<std::mutex> lock(m_);
    return aborted_;
  }

  std::vector<uint8_t> get(const std::string& key) override {
    wait({key}, timeout_);
    std::lock_guard<std::mutex> lock(m_);
    return map_.at(key);
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    std::unique_lock<std::mutex> lock(m_);
    auto present = [&] {
      for (const auto& k : keys)
        if (map_.find(k) == map_.end()) return false;
      return true;
    };
    auto ready = [&] { return aborted_ || present(); };
    if (timeout == kNoTimeout)
      cv_.wait(lock, ready);
    else if (!cv_.wait_for(lock, timeout, ready))
      throw std::system_error(ETIMEDOUT, std::system_category(), "Wait timeout");
    if (!present()) throw std::runtime_error("the group was aborted: " + reason_);
  }

 private:
  bool aborted_ = false;
  std::string reason_;
};

}  // namespace

struct Store::Impl {
  c10::intrusive_ptr<c10d::Store> store;  // what operations go to (a PrefixStore for prefixed views)
  c10::intrusive_ptr<c10d::Store> root;   // the HashStore / TCPStore
  c10::intrusive_ptr<AbortableHashStore> in_process;  // the root, in process
  bool tcp = false;
  bool server = false;
  int port = 0;
  std::string host;
};

namespace {

std::vector<uint8_t> bytes(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }
std::string text(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }

std::string port_hint(int port) {
  return "choose another port: set MASTER_PORT to a free one (e.g. " + std::to_string(port == 65535 ? 29400 : port + 1) +
         "), or find the process holding it with `ss -ltnp | grep :" + std::to_string(port) + "`";
}

// Throws DistError(init) when something already listens on `port`.
void check_port_free(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return;
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  int err = errno;
  ::close(fd);
  if (rc != 0 && (err == EADDRINUSE || err == EACCES))
    throw DistError(DistError::Kind::init,
                    "tv.dist: port " + std::to_string(port) + " (MASTER_PORT) is " +
                        (err == EADDRINUSE ? "already in use" : "not allowed") +
                        " on this machine, so rank 0 cannot host the TCP store there; " + port_hint(port),
                    "init");
}

}  // namespace

Store::Store(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::shared_ptr<Store> Store::in_process(std::chrono::milliseconds timeout) {
  auto impl = std::make_shared<Impl>();
  impl->in_process = c10::make_intrusive<AbortableHashStore>();
  impl->root = impl->in_process;
  impl->root->setTimeout(timeout);
  impl->store = impl->root;
  return std::make_shared<Store>(std::move(impl));
}

std::shared_ptr<Store> Store::tcp(const std::string& host, int port, bool is_server, int world_size,
                                  std::chrono::milliseconds timeout) {
  if (port < 0 || port > 65535 || (!is_server && port == 0))
    throw DistError(DistError::Kind::usage, "tv.dist: bad TCP store port " + std::to_string(port), "init");
  if (is_server && port != 0) check_port_free(port);
  c10d::TCPStoreOptions o;
  o.port = static_cast<uint16_t>(port);
  o.isServer = is_server;
  o.numWorkers = static_cast<std::size_t>(world_size);
  o.waitWorkers = false;
  o.timeout = timeout;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 2)
  o.useLibUV = use_libuv(o.useLibUV);
#endif
  auto impl = std::make_shared<Impl>();
  try {
    auto s = c10::make_intrusive<c10d::TCPStore>(host, o);
    impl->port = s->getPort();
    impl->root = s;
  } catch (const std::exception& e) {
    std::string what = detail::message_of(e);
    if (is_server)
      throw DistError(DistError::Kind::init,
                      "tv.dist: rank 0 could not host the TCP store on port " + std::to_string(port) + ": " + what +
                          (what.find("in use") != std::string::npos || what.find("bind") != std::string::npos
                               ? "; " + port_hint(port)
                               : std::string()),
                      "init", timeout);
    throw DistError(DistError::Kind::init,
                    "tv.dist: could not reach the TCP store at " + host + ":" + std::to_string(port) + " within " +
                        std::to_string(timeout.count()) +
                        " ms (is rank 0 running, and are MASTER_ADDR/MASTER_PORT the same on every rank?): " + what,
                    "init", timeout, {0});
  }
  impl->root->setTimeout(timeout);
  impl->store = impl->root;
  impl->tcp = true;
  impl->server = is_server;
  impl->host = host;
  return std::make_shared<Store>(std::move(impl));
}

std::shared_ptr<Store> Store::prefixed(const std::string& prefix) const {
  auto impl = std::make_shared<Impl>(*impl_);
  impl->store = c10::make_intrusive<c10d::PrefixStore>(prefix, impl_->store);
  return std::make_shared<Store>(std::move(impl));
}

void Store::set(const std::string& key, const std::string& value) { impl_->store->set(key, bytes(value)); }

std::string Store::get(const std::string& key) {
  try {
    return text(impl_->store->get(key));
  } catch (const std::exception& e) {
    throw DistError(DistError::Kind::init,
                    "tv.dist: store key '" + key + "' did not appear within " + std::to_string(timeout().count()) +
                        " ms: " + detail::message_of(e),
                    "store", timeout());
  }
}

std::optional<std::string> Store::try_get(const std::string& key) {
  if (!impl_->store->check({key})) return std::nullopt;
  return text(impl_->store->get(key));
}

bool Store::check(const std::string& key) { return impl_->store->check({key}); }

int64_t Store::add(const std::string& key, int64_t delta) { return impl_->store->add(key, delta); }

void Store::abort(const std::string& reason) {
  if (impl_->in_process) impl_->in_process->abort(reason);
}

bool Store::aborted() const { return impl_->in_process && impl_->in_process->aborted(); }

std::chrono::milliseconds Store::timeout() const { return impl_->root->getTimeout(); }

void Store::set_timeout(std::chrono::milliseconds timeout) {
  impl_->root->setTimeout(timeout);
  if (impl_->store.get() != impl_->root.get()) impl_->store->setTimeout(timeout);
}

bool Store::is_tcp() const { return impl_->tcp; }
bool Store::is_server() const { return impl_->server; }
int Store::port() const { return impl_->port; }
const std::string& Store::host() const { return impl_->host; }
const void* Store::native() const { return &impl_->store; }

int pick_free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw DistError(DistError::Kind::init, std::string("tv.dist: socket(): ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    int err = errno;
    ::close(fd);
    throw DistError(DistError::Kind::init, std::string("tv.dist: could not pick a free port: ") + std::strerror(err));
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace tv::dist
