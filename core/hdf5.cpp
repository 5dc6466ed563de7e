#include "core/hdf5.hpp"

#include <cstring>

#include "core/errors.hpp"

namespace ibt::h5 {

void silence_errors() {
  static const bool silenced = [] {
    H5open();
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)silenced;
}

namespace {

herr_t take_innermost(unsigned n, const H5E_error2_t* err, void* out) {
  auto* text = static_cast<std::string*>(out);
  // Walking upward, entry 0 is the most specific failure (the one that explains).
  if (n == 0 && err->desc) *text = err->desc;
  return 0;
}

Handle checked(hid_t id, Handle::Closer closer, const std::string& what) {
  if (id < 0) fail<RuntimeError>(what);
  return Handle(id, closer);
}

}  // namespace

std::string error_detail() {
  std::string text;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, take_innermost, &text);
  return text;
}

Handle checked_file(hid_t id, const std::string& what) { return checked(id, H5Fclose, what); }
Handle checked_group(hid_t id, const std::string& what) { return checked(id, H5Gclose, what); }
Handle checked_dataset(hid_t id, const std::string& what) { return checked(id, H5Dclose, what); }
Handle checked_attribute(hid_t id, const std::string& what) { return checked(id, H5Aclose, what); }
Handle checked_type(hid_t id, const std::string& what) { return checked(id, H5Tclose, what); }
Handle checked_space(hid_t id, const std::string& what) { return checked(id, H5Sclose, what); }
Handle checked_plist(hid_t id, const std::string& what) { return checked(id, H5Pclose, what); }

void check(herr_t status, const std::string& what) {
  if (status < 0) fail<RuntimeError>(what);
}

Handle file_access_plist() {
  Handle fapl = checked_plist(H5Pcreate(H5P_FILE_ACCESS), "creating file access properties");
  check(H5Pset_file_locking(fapl.get(), /*use_file_locking=*/1, /*ignore_when_disabled=*/1),
        "configuring HDF5 file locking");
  return fapl;
}

namespace {

Handle utf8_string_type() {
  Handle type = checked_type(H5Tcopy(H5T_C_S1), "creating a string type");
  check(H5Tset_size(type.get(), H5T_VARIABLE), "sizing a string type");
  check(H5Tset_cset(type.get(), H5T_CSET_UTF8), "setting a string type's character set");
  return type;
}

// Removes the padding of a fixed-length string (NUL or space, by its padding rule).
std::string unpad(const char* data, std::size_t size, H5T_str_t pad) {
  std::size_t n = strnlen(data, size);
  if (pad == H5T_STR_SPACEPAD)
    while (n > 0 && data[n - 1] == ' ') --n;
  return std::string(data, n);
}

std::string read_string_attribute(hid_t attr, hid_t file_type, hid_t space) {
  if (H5Tis_variable_str(file_type) > 0) {
    Handle mem = utf8_string_type();
    check(H5Tset_cset(mem.get(), H5Tget_cset(file_type)), "matching a string's character set");
    char* text = nullptr;
    check(H5Aread(attr, mem.get(), &text), "reading a string attribute");
    std::string value = text ? text : "";
    H5Dvlen_reclaim(mem.get(), space, H5P_DEFAULT, &text);
    return value;
  }
  const std::size_t size = H5Tget_size(file_type);
  std::vector<char> buffer(size + 1, '\0');
  Handle mem = checked_type(H5Tcopy(file_type), "copying a string type");
  check(H5Aread(attr, mem.get(), buffer.data()), "reading a string attribute");
  return unpad(buffer.data(), size, H5Tget_strpad(file_type));
}

herr_t collect_attribute_name(hid_t, const char* name, const H5A_info_t*, void* out) {
  static_cast<std::vector<std::string>*>(out)->push_back(name);
  return 0;
}

herr_t collect_link_name(hid_t, const char* name, const H5L_info_t*, void* out) {
  static_cast<std::vector<std::string>*>(out)->push_back(name);
  return 0;
}

}  // namespace

bool has_attribute(hid_t object, const std::string& name) {
  const htri_t exists = H5Aexists(object, name.c_str());
  check(exists, "looking up attribute '" + name + "'");
  return exists > 0;
}

void set_attribute(hid_t object, const std::string& name, const AttrValue& value) {
  const std::string what = "writing attribute '" + name + "'";
  if (has_attribute(object, name)) check(H5Adelete(object, name.c_str()), what);
  Handle space = checked_space(H5Screate(H5S_SCALAR), what);
  if (const auto* i = std::get_if<std::int64_t>(&value)) {
    Handle attr =
        checked_attribute(H5Acreate2(object, name.c_str(), H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), what);
    check(H5Awrite(attr.get(), H5T_NATIVE_INT64, i), what);
  } else if (const auto* d = std::get_if<double>(&value)) {
    Handle attr = checked_attribute(
        H5Acreate2(object, name.c_str(), H5T_IEEE_F64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), what);
    check(H5Awrite(attr.get(), H5T_NATIVE_DOUBLE, d), what);
  } else {
    Handle type = utf8_string_type();
    Handle attr =
        checked_attribute(H5Acreate2(object, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), what);
    const char* text = std::get<std::string>(value).c_str();
    check(H5Awrite(attr.get(), type.get(), &text), what);
  }
}

AttrValue read_attribute(hid_t object, const std::string& name) {
  const std::string what = "reading attribute '" + name + "'";
  Handle attr = checked_attribute(H5Aopen(object, name.c_str(), H5P_DEFAULT), what);
  Handle type = checked_type(H5Aget_type(attr.get()), what);
  Handle space = checked_space(H5Aget_space(attr.get()), what);
  const hssize_t points = H5Sget_simple_extent_npoints(space.get());
  // ibt writes scalars only; a foreign array attribute is shown, not interpreted.
  if (points != 1) return std::string("<" + std::to_string(points) + " values>");
  switch (H5Tget_class(type.get())) {
    case H5T_INTEGER: {
      std::int64_t v = 0;
      check(H5Aread(attr.get(), H5T_NATIVE_INT64, &v), what);
      return v;
    }
    case H5T_FLOAT: {
      double v = 0;
      check(H5Aread(attr.get(), H5T_NATIVE_DOUBLE, &v), what);
      return v;
    }
    case H5T_STRING: return read_string_attribute(attr.get(), type.get(), space.get());
    default: return std::string("<unsupported attribute type>");
  }
}

std::vector<std::pair<std::string, AttrValue>> read_attributes(hid_t object) {
  std::vector<std::string> names;
  hsize_t index = 0;
  check(H5Aiterate2(object, H5_INDEX_NAME, H5_ITER_INC, &index, collect_attribute_name, &names), "listing attributes");
  std::vector<std::pair<std::string, AttrValue>> out;
  out.reserve(names.size());
  for (const auto& name : names) out.emplace_back(name, read_attribute(object, name));
  return out;
}

std::vector<std::string> child_names(hid_t group) {
  std::vector<std::string> names;
  hsize_t index = 0;
  check(H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, &index, collect_link_name, &names), "listing a group");
  return names;
}

bool has_child(hid_t group, const std::string& name) {
  const htri_t exists = H5Lexists(group, name.c_str(), H5P_DEFAULT);
  check(exists, "looking up '" + name + "'");
  return exists > 0;
}

}  // namespace ibt::h5
