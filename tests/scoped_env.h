// An environment variable set for one scope (runtime::Config reads the
// environment when a session loads), and what was there restored after.
#pragma once
#include <cstdlib>
#include <string>

namespace kestrel::test {

class ScopedEnv {
 public:
  // `value` null: the variable is unset for the scope.
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) had_ = true, old_ = old;
    set(value);
  }
  // Sets it again within the scope (null: unsets it).
  void set(const char* value) {
    if (value) setenv(name_, value, 1);
    else unsetenv(name_);
  }
  ~ScopedEnv() {
    if (had_) setenv(name_, old_.c_str(), 1);
    else unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

}  // namespace kestrel::test
