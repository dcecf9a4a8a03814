// Store: the key-value store the ranks of a group meet through (c10d HashStore in one process,
// TCPStore across processes). Contract: values are byte strings; `get` waits for the key up to
// the store's timeout and throws DistError(init) naming the key after that; `try_get` never
// waits. `tcp(..., is_server=true)` listens on `port` (0 picks a free one, see `port()`); a port
// already in use throws DistError(init) saying which port and how to choose another. Clients
// retry connecting until the timeout. `prefixed(p)` views the same store with keys under "p/".
// `abort(reason)` (in-process stores; a no-op over TCP) makes every pending and later wait for a
// key throw at once, naming the reason: ranks still joining a group stop waiting for one that
// failed. All methods are thread-safe.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace tv::dist {

class Store {
 public:
  static std::shared_ptr<Store> in_process(std::chrono::milliseconds timeout = std::chrono::seconds(60));
  static std::shared_ptr<Store> tcp(const std::string& host, int port, bool is_server, int world_size,
                                    std::chrono::milliseconds timeout = std::chrono::seconds(60));

  std::shared_ptr<Store> prefixed(const std::string& prefix) const;

  void set(const std::string& key, const std::string& value);
  std::string get(const std::string& key);
  std::optional<std::string> try_get(const std::string& key);
  bool check(const std::string& key);
  int64_t add(const std::string& key, int64_t delta);

  void abort(const std::string& reason);
  bool aborted() const;

  std::chrono::milliseconds timeout() const;
  void set_timeout(std::chrono::milliseconds timeout);
  bool is_tcp() const;
  bool is_server() const;          // this process hosts the TCP store
  int port() const;                // TCP port (0 in process)
  const std::string& host() const;  // TCP host ("" in process)

  // For backends (.cpp files): the wrapped store, a `const c10::intrusive_ptr<c10d::Store>*`.
  const void* native() const;

  struct Impl;
  explicit Store(std::shared_ptr<Impl> impl);

 private:
  std::shared_ptr<Impl> impl_;
};

// A port on 127.0.0.1 that was free a moment ago (bind to port 0, read it back, close).
int pick_free_port();

}  // namespace tv::dist
