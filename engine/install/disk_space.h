#pragma once
#include <cstdint>
#include <string>

namespace deltafin {

// Bytes an unprivileged user can still write on the file system holding `path`
// (the nearest existing parent is used when path does not exist yet).
uint64_t free_disk_bytes(const std::string& path);

// Throws Error with both numbers when `needed` + `margin` bytes do not fit.
void check_disk_space(const std::string& path, uint64_t needed, uint64_t margin);

// "1.56 TB (1,560,860,324,864 bytes)": decimal units, as the Hub shows sizes.
std::string format_bytes(uint64_t bytes);
std::string format_bytes_exact(uint64_t bytes);
std::string format_duration(double seconds);
// "500G", "1.5TB", "64GiB", "123456" -> bytes (k/M/G/T decimal, KiB/MiB/GiB/TiB binary).
uint64_t parse_size(const std::string& text);

}  // namespace deltafin
