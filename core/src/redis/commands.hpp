// Building the stores' commands and reading their replies (internal).
#pragma once

#include <string>

#include "request.hpp"
#include "ratewarden/decision.hpp"
#include "ratewarden/clock.hpp"
#include "ratewarden/store.hpp"

namespace ratewarden {

// The ARGV "now" of the scripts: the test clock's time, or "" for the server's TIME.
std::string script_now(const Clock& clock);

// EVALSHA of the call's algorithm script, with the calling convention of core/src/algorithms/prelude.lua.
void build_script_call(RedisRequest& req, const StoreCall& call, const std::string& now);
// DEL of the keys.
void build_delete(RedisRequest& req, const std::string* keys, size_t count);

// The decision in a script's reply; throws StoreError for an error or anything else. `name` labels messages.
Decision to_decision(const RedisRequest& req, const std::string& name);
// Throws the request's failure, or its error reply, or "unexpected reply", as a StoreError.
[[noreturn]] void throw_reply_error(const RedisRequest& req, const std::string& name);
// Throws StoreError unless the reply is of `type`.
void expect_reply(const RedisRequest& req, int type, const std::string& name);

}  // namespace ratewarden
