#include "models/checkpoint/shard_io.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <vector>

#include "core/errors.hpp"
#include "core/hdf5.hpp"

namespace ibt::checkpoint {

namespace h5 = ibt::h5;

namespace {

std::string errno_text() { return std::strerror(errno); }

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out.push_back(line);
  return out;
}

std::int64_t int_attr(hid_t file, const char* name, const std::string& path) {
  if (!h5::has_attribute(file, name)) throw UsageError(path + ": not a checkpoint shard (no attribute " + name + ")");
  const store::AttrValue v = h5::read_attribute(file, name);
  if (!std::holds_alternative<std::int64_t>(v)) throw UsageError(path + ": attribute " + name + " is not an integer");
  return std::get<std::int64_t>(v);
}

}  // namespace

std::string step_dir_name(std::int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step-%06lld", static_cast<long long>(step));
  return buf;
}

std::string shard_file_name(int rank) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "rank-%05d.h5", rank);
  return buf;
}

void fsync_path(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw RuntimeError("cannot open " + path + " to fsync it: " + errno_text());
  const int rc = ::fsync(fd);
  const std::string why = rc != 0 ? errno_text() : "";
  ::close(fd);
  if (rc != 0) throw RuntimeError("fsync of " + path + " failed: " + why);
}

double evict_from_page_cache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw RuntimeError("cannot open " + path + ": " + errno_text());
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size == 0) {
    ::close(fd);
    return 0.0;
  }
  ::fdatasync(fd);  // only clean pages can be dropped
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  const size_t size = static_cast<size_t>(st.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) throw RuntimeError("cannot map " + path + ": " + errno_text());
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> resident((size + page - 1) / page);
  const int rc = ::mincore(map, size, resident.data());
  ::munmap(map, size);
  if (rc != 0) throw RuntimeError("mincore on " + path + " failed: " + errno_text());
  size_t in_cache = 0;
  for (unsigned char r : resident) in_cache += r & 1u;
  return static_cast<double>(in_cache) / static_cast<double>(resident.size());
}

namespace {

// A shard is refused before HDF5 creates it when its file system lacks the room: an HDF5
// file whose final flush fails with ENOSPC cannot be closed cleanly (HDF5 1.10 keeps it
// open and crashes closing it at exit), so the common case, a disk already too full for
// the shard, never reaches HDF5. The margin covers HDF5's metadata (a few KiB per array).
// Ranks writing to one file system check alone: together they may still fill it.
void require_room_for_shard(const std::string& path, const models::TrainingState& state) {
  double bytes = 1 << 20;
  for (const models::StateArray& a : state.arrays) bytes += 4096.0 + static_cast<double>(a.data.size()) * sizeof(float);
  const std::size_t slash = path.find_last_of('/');
  const std::string folder = slash == std::string::npos ? "." : path.substr(0, slash);
  struct statvfs fs {};
  if (::statvfs(folder.c_str(), &fs) != 0) return;  // the create below names the problem
  const double free_bytes = static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize);
  if (free_bytes < bytes)
    throw StorageError(path + ": disk full: its file system has " + std::to_string(static_cast<long long>(free_bytes)) +
                       " bytes free and the shard needs about " + std::to_string(static_cast<long long>(bytes)) +
                       "; the checkpoint is not saved (the last complete one is kept)");
}

}  // namespace

ShardWrite write_shard(const std::string& path, const models::TrainingState& state) {
  h5::silence_errors();
  require_room_for_shard(path, state);
  const auto t0 = std::chrono::steady_clock::now();
  {
    h5::Handle fapl = h5::file_access_plist();
    h5::Handle file = h5::checked_file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()),
                                       "cannot create checkpoint shard " + path);
    h5::set_attribute(file.get(), "ibt_schema", std::string(kShardSchema));
    h5::set_attribute(file.get(), "ibt_schema_version", static_cast<std::int64_t>(kShardSchemaVersion));
    h5::set_attribute(file.get(), "steps_done", state.steps_done);
    h5::set_attribute(file.get(), "optimizer_steps", state.optimizer_steps);
    h5::set_attribute(file.get(), "seed", static_cast<std::int64_t>(state.seed));
    std::string names;
    for (const models::StateArray& a : state.arrays) names += a.name + "\n";
    h5::set_attribute(file.get(), "array_names", names);
    h5::Handle lcpl = h5::checked_plist(H5Pcreate(H5P_LINK_CREATE), "creating link properties");
    h5::check(H5Pset_create_intermediate_group(lcpl.get(), 1), "setting intermediate group creation");
    // No modification times in the object headers: the same state gives the same bytes,
    // so checksums of two runs' shards compare their states.
    h5::Handle dcpl = h5::checked_plist(H5Pcreate(H5P_DATASET_CREATE), "creating dataset properties");
    h5::check(H5Pset_obj_track_times(dcpl.get(), 0), "disabling object times");
    for (const models::StateArray& a : state.arrays) {
      const hsize_t dims[1] = {static_cast<hsize_t>(a.data.size())};
      h5::Handle space = h5::checked_space(H5Screate_simple(1, dims, nullptr), "creating a dataspace");
      h5::Handle ds = h5::checked_dataset(
          H5Dcreate2(file.get(), a.name.c_str(), H5T_IEEE_F32LE, space.get(), lcpl.get(), dcpl.get(), H5P_DEFAULT),
          path + ": cannot create array " + a.name);
      if (!a.data.empty())
        h5::check(H5Dwrite(ds.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, a.data.data()),
                  path + ": cannot write array " + a.name);
    }
    h5::check(H5Fflush(file.get(), H5F_SCOPE_GLOBAL), path + ": flush failed");
  }  // closed here
  fsync_path(path);
  ShardWrite w;
  w.write_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  w.checksum = file_checksum(path, &w.bytes);
  return w;
}

models::TrainingState read_shard(const std::string& path) {
  h5::silence_errors();
  if (::access(path.c_str(), R_OK) != 0) throw UsageError("checkpoint shard " + path + " is missing or unreadable");
  if (H5Fis_hdf5(path.c_str()) <= 0) throw UsageError("checkpoint shard " + path + " is not an HDF5 file");
  h5::Handle fapl = h5::file_access_plist();
  const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get());
  if (id < 0) throw UsageError("cannot open checkpoint shard " + path + " (damaged?)");
  h5::Handle file(id, H5Fclose);
  if (!h5::has_attribute(file.get(), "ibt_schema") ||
      h5::read_attribute(file.get(), "ibt_schema") != store::AttrValue(std::string(kShardSchema)))
    throw UsageError(path + ": not an ibt checkpoint shard");
  const std::int64_t version = int_attr(file.get(), "ibt_schema_version", path);
  if (version != kShardSchemaVersion)
    throw UsageError(path + ": shard schema version " + std::to_string(version) + ", this ibt reads " +
                     std::to_string(kShardSchemaVersion));
  models::TrainingState s;
  s.steps_done = int_attr(file.get(), "steps_done", path);
  s.optimizer_steps = int_attr(file.get(), "optimizer_steps", path);
  s.seed = static_cast<std::uint64_t>(int_attr(file.get(), "seed", path));
  const store::AttrValue names = h5::read_attribute(file.get(), "array_names");
  if (!std::holds_alternative<std::string>(names)) throw UsageError(path + ": array_names is not a string");
  for (const std::string& name : split_lines(std::get<std::string>(names))) {
    const hid_t did = H5Dopen2(file.get(), name.c_str(), H5P_DEFAULT);
    if (did < 0) throw UsageError(path + ": array " + name + " is missing");
    h5::Handle ds(did, H5Dclose);
    h5::Handle space = h5::checked_space(H5Dget_space(ds.get()), path + ": array " + name);
    const hssize_t n = H5Sget_simple_extent_npoints(space.get());
    if (n < 0) throw UsageError(path + ": array " + name + " has no size");
    models::StateArray a;
    a.name = name;
    a.data.resize(static_cast<size_t>(n));
    if (n > 0 && H5Dread(ds.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, a.data.data()) < 0)
      throw UsageError(path + ": array " + name + " cannot be read (damaged?)");
    s.arrays.push_back(std::move(a));
  }
  return s;
}

std::string file_checksum(const std::string& path, std::uint64_t* bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw UsageError("cannot read " + path + ": " + errno_text());
  std::vector<unsigned char> buf(4u << 20);
  uLong crc = crc32(0L, Z_NULL, 0);
  std::uint64_t total = 0;
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      const std::string why = errno_text();
      ::close(fd);
      throw UsageError("cannot read " + path + ": " + why);
    }
    if (n == 0) break;
    crc = crc32_z(crc, buf.data(), static_cast<size_t>(n));
    total += static_cast<std::uint64_t>(n);
  }
  ::close(fd);
  if (bytes) *bytes = total;
  char out[24];
  std::snprintf(out, sizeof out, "crc32:%08lx", static_cast<unsigned long>(crc));
  return out;
}

}  // namespace ibt::checkpoint
