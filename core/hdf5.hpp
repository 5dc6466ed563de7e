#pragma once
// Thin RAII and error helpers over the HDF5 C API, shared by the results store
// (reports/) and the checkpoint shards (models/checkpoint/).
// HDF5 reports failures by negative return values and by printing its error stack to
// stderr; these helpers turn both into exceptions that carry HDF5's innermost message.
#include <hdf5.h>

#include <string>
#include <utility>
#include <vector>

#include "core/columns.hpp"

namespace ibt::h5 {

using store::AttrValue;

// Stops HDF5 printing its error stack; every failure becomes an exception instead.
// Idempotent; called by every public entry point of the store.
void silence_errors();

// The most specific message on HDF5's current error stack ("" when empty). Call it
// right after the failing call: the next HDF5 call clears the stack.
std::string error_detail();

// Throws E with `what`, followed by HDF5's own explanation when it has one.
template <class E>
[[noreturn]] void fail(const std::string& what) {
  const std::string detail = error_detail();
  throw E(detail.empty() ? what : what + " (HDF5: " + detail + ")");
}

// Owns one HDF5 identifier and closes it with the matching H5?close.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  Handle(Handle&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)), closer_(o.closer_) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, H5I_INVALID_HID);
      closer_ = o.closer_;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void reset() {
    if (id_ >= 0 && closer_) closer_(id_);
    id_ = H5I_INVALID_HID;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

// Each wraps a fresh identifier, throwing RuntimeError (naming `what`) when it is invalid.
Handle checked_file(hid_t id, const std::string& what);
Handle checked_group(hid_t id, const std::string& what);
Handle checked_dataset(hid_t id, const std::string& what);
Handle checked_attribute(hid_t id, const std::string& what);
Handle checked_type(hid_t id, const std::string& what);
Handle checked_space(hid_t id, const std::string& what);
Handle checked_plist(hid_t id, const std::string& what);
// Throws RuntimeError naming `what` when an herr_t/htri_t call failed (< 0).
void check(herr_t status, const std::string& what);

// The file access properties every open uses: default HDF5 file locking, but tolerated
// where the filesystem has none (Lustre, some NFS mounts) instead of failing to open.
Handle file_access_plist();

// Attributes: scalar int64, float64, or variable-length UTF-8 string (what h5py reads
// back as int, float and str). Setting an existing attribute replaces it.
void set_attribute(hid_t object, const std::string& name, const AttrValue& value);
bool has_attribute(hid_t object, const std::string& name);
AttrValue read_attribute(hid_t object, const std::string& name);
// Every attribute of an object, sorted by name.
std::vector<std::pair<std::string, AttrValue>> read_attributes(hid_t object);

// Names of an object's direct children (links), sorted by name.
std::vector<std::string> child_names(hid_t group);
bool has_child(hid_t group, const std::string& name);

}  // namespace ibt::h5
