#include "key_slot.hpp"

#include <array>
#include <cstdint>

namespace ratewarden {
namespace {

std::array<uint16_t, 256> make_table() {
  std::array<uint16_t, 256> table{};
  for (int i = 0; i < 256; ++i) {
    uint16_t crc = static_cast<uint16_t>(i << 8);
    for (int bit = 0; bit < 8; ++bit) crc = static_cast<uint16_t>(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
    table[i] = crc;
  }
  return table;
}

uint16_t crc16(std::string_view data) {
  static const std::array<uint16_t, 256> table = make_table();
  uint16_t crc = 0;
  for (unsigned char c : data) crc = static_cast<uint16_t>((crc << 8) ^ table[((crc >> 8) ^ c) & 0xff]);
  return crc;
}

}  // namespace

int key_slot(std::string_view key) {
  const size_t open = key.find('{');
  if (open != std::string_view::npos) {
    const size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) key = key.substr(open + 1, close - open - 1);
  }
  return crc16(key) & (kClusterSlots - 1);
}

}  // namespace ratewarden
