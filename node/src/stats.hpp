// The core's figures for JS (ratewarden/stats.hpp, ratewarden/metric_families.hpp): converted, never re-decided.
// Every name, type, help text and label of a metric family is the core's.
#pragma once

#include <napi.h>

#include "ratewarden/stats.hpp"

namespace rwnode {

// { name, allowed, denied, cost, fallbacks }
Napi::Object limiter_stats_object(Napi::Env env, const ratewarden::LimiterStats& s);
// { name, network, hybrid, keys, maxKeys, evictions, expiredDrops, localDenials, ..., calls: { ok, timeout,
// unavailable, error }, circuitsOpen, circuitOpenings, connectionsOpen, poolSize, sweeps }
Napi::Object store_stats_object(Napi::Env env, const ratewarden::StoreStats& s);

// limiterStats(), storeStats(), metricFamilies(), prometheusText(), metricCatalog() on `exports`.
void define_stats_functions(Napi::Env env, Napi::Object exports);

}  // namespace rwnode
