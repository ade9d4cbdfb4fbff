#include "cpu/stream.h"

#include <cstdlib>
#include <fstream>
#include <string>

namespace purlin::cpu {

size_t last_level_cache_bytes() {
  static const size_t bytes = [] {
    size_t best = 0;
    int best_level = 0;
    for (int index = 0;; ++index) {
      const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
      std::ifstream level_file(dir + "level"), size_file(dir + "size");
      int level = 0;
      std::string size;  // as "32768K"
      if (!(level_file >> level) || !(size_file >> size)) break;
      char* unit = nullptr;
      size_t value = std::strtoull(size.c_str(), &unit, 10);
      if (*unit == 'K') value <<= 10;
      else if (*unit == 'M') value <<= 20;
      if (level >= best_level) {
        best_level = level;
        best = value;
      }
    }
    return best ? best : size_t(32) << 20;
  }();
  return bytes;
}

}  // namespace purlin::cpu
