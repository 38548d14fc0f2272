// ratewarden: one header for the whole C++ API.
#pragma once

#include "ratewarden/algorithms.hpp"
#include "ratewarden/clock.hpp"
#include "ratewarden/cluster_store.hpp"
#include "ratewarden/decision.hpp"
#include "ratewarden/errors.hpp"
#include "ratewarden/events.hpp"
#include "ratewarden/key_list.hpp"
#include "ratewarden/limiter.hpp"
#include "ratewarden/memory_store.hpp"
#include "ratewarden/metric_families.hpp"
#include "ratewarden/network_options.hpp"
#include "ratewarden/policy.hpp"
#include "ratewarden/redis_store.hpp"
#include "ratewarden/stats.hpp"
#include "ratewarden/store.hpp"
#include "ratewarden/version.hpp"
