#include "libpq_api.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "ratewarden/errors.hpp"

namespace ratewarden {
namespace {

constexpr const char* kInstall =
    "install libpq 14 or later (Debian/Ubuntu: apt-get install libpq5; Fedora: dnf install libpq), or point "
    "RATEWARDEN_LIBPQ at its libpq.so.5 (docs/deployment.md, \"PostgreSQL\")";

struct Loaded {
  LibPq api{};
  std::string error;  // empty: loaded
};

template <typename F>
bool resolve(void* library, const char* name, F& slot) {
  slot = reinterpret_cast<F>(dlsym(library, name));
  return slot != nullptr;
}

// RTLD_LOCAL: libpq's symbols (and those of its own libraries) stay out of the process's global namespace.
void load(Loaded& out) {
  const char* override_path = std::getenv("RATEWARDEN_LIBPQ");
  const std::string path = override_path != nullptr && *override_path != '\0' ? override_path : "libpq.so.5";
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    out.error = "the PostgreSQL store needs libpq.so.5, which could not be loaded from \"" + path +
                "\" (" + (why != nullptr ? why : "not found") + "); " + kInstall;
    return;
  }
  LibPq& a = out.api;
  const char* missing = nullptr;
  auto need = [&](const char* name, auto& slot) {
    if (missing == nullptr && !resolve(library, name, slot)) missing = name;
  };
  need("PQconnectStartParams", a.connectStartParams);
  need("PQconnectPoll", a.connectPoll);
  need("PQstatus", a.status);
  need("PQsetnonblocking", a.setnonblocking);
  need("PQsetNoticeProcessor", a.setNoticeProcessor);
  need("PQsocket", a.socket);
  need("PQerrorMessage", a.errorMessage);
  need("PQfinish", a.finish);
  need("PQsendQuery", a.sendQuery);
  need("PQsendPrepare", a.sendPrepare);
  need("PQsendQueryPrepared", a.sendQueryPrepared);
  need("PQenterPipelineMode", a.enterPipelineMode);
  need("PQpipelineSync", a.pipelineSync);
  need("PQflush", a.flush);
  need("PQconsumeInput", a.consumeInput);
  need("PQisBusy", a.isBusy);
  need("PQgetResult", a.getResult);
  need("PQresultStatus", a.resultStatus);
  need("PQresStatus", a.resStatus);
  need("PQresultErrorMessage", a.resultErrorMessage);
  need("PQresultErrorField", a.resultErrorField);
  need("PQntuples", a.ntuples);
  need("PQnfields", a.nfields);
  need("PQgetvalue", a.getvalue);
  need("PQgetlength", a.getlength);
  need("PQclear", a.clear);
  if (missing != nullptr) {
    out.error = "the PostgreSQL store needs libpq.so.5 version 14 or later, but \"" + path + "\" has no " + missing +
                " (pipeline mode came in libpq 14); " + kInstall;
    dlclose(library);
    out.api = LibPq{};
  }
  // Loaded, the library stays for the life of the process.
}

}  // namespace

const LibPq& libpq() {
  static std::once_flag once;
  static Loaded loaded;
  std::call_once(once, [] { load(loaded); });
  if (!loaded.error.empty()) throw InvalidArgument(loaded.error);
  return loaded.api;
}

}  // namespace ratewarden
