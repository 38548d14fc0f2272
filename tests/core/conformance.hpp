// The shared conformance vectors (tests/conformance/vectors.json), runnable against any store.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ratewarden/ratewarden.hpp"

namespace ratewarden::testing {

const nlohmann::json& conformance_vectors();
std::vector<size_t> conformance_cases();
std::string conformance_case_name(const ::testing::TestParamInfo<size_t>& info);

// Runs one case on `store` with a fresh prefix; `set_time` receives each step's absolute time before the step.
void run_conformance_case(size_t index, const std::shared_ptr<Store>& store,
                          const std::function<void(int64_t)>& set_time);

}  // namespace ratewarden::testing
