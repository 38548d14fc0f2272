// libpq, loaded at run time (internal): the binary packages cannot link it in (it brings Kerberos, LDAP and GnuTLS
// with it), so the PostgreSQL store resolves the functions it calls from libpq.so.5 when the first postgres:// store
// opens, once per process. libpq-fe.h gives the types only. RATEWARDEN_LIBPQ overrides the library's path.
#pragma once

#include <libpq-fe.h>

namespace ratewarden {

struct LibPq {
  decltype(&::PQconnectStartParams) connectStartParams;
  decltype(&::PQconnectPoll) connectPoll;
  decltype(&::PQstatus) status;
  decltype(&::PQsetnonblocking) setnonblocking;
  decltype(&::PQsetNoticeProcessor) setNoticeProcessor;
  decltype(&::PQsocket) socket;
  decltype(&::PQerrorMessage) errorMessage;
  decltype(&::PQfinish) finish;
  decltype(&::PQsendQuery) sendQuery;
  decltype(&::PQsendPrepare) sendPrepare;
  decltype(&::PQsendQueryPrepared) sendQueryPrepared;
  decltype(&::PQenterPipelineMode) enterPipelineMode;  // libpq 14: the one an older libpq lacks
  decltype(&::PQpipelineSync) pipelineSync;
  decltype(&::PQflush) flush;
  decltype(&::PQconsumeInput) consumeInput;
  decltype(&::PQisBusy) isBusy;
  decltype(&::PQgetResult) getResult;
  decltype(&::PQresultStatus) resultStatus;
  decltype(&::PQresStatus) resStatus;
  decltype(&::PQresultErrorMessage) resultErrorMessage;
  decltype(&::PQresultErrorField) resultErrorField;
  decltype(&::PQntuples) ntuples;
  decltype(&::PQnfields) nfields;
  decltype(&::PQgetvalue) getvalue;
  decltype(&::PQgetlength) getlength;
  decltype(&::PQclear) clear;
};

// The table, loaded on the first call (thread-safe). Throws InvalidArgument, on this and every later call, when the
// library or one of its functions is missing: the message names libpq.so.5 and the package that brings it.
const LibPq& libpq();

}  // namespace ratewarden
