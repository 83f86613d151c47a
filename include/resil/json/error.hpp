// resil/json/error.hpp — config_error, the one exception the JSON reader
// throws: where (a JSON path) and why, prefixed with the file when it came
// from load_config().
//
//   try { auto cfg = resil::json::load_config("triton.json"); }
//   catch (const resil::json::config_error& e) {
//       // e.what():   "triton.json: retry.max_attempts: must be in [1, 100], got 0"
//       // e.path():   "retry.max_attempts"     e.reason(): "must be in [1, 100], got 0"
//   }
#pragma once

#include "../detail/platform.hpp"

#if RESIL_DETAIL_BODIES
#include <nlohmann/json.hpp>  // join() quotes a key as JSON does
#endif

#include <cstddef>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "../validation.hpp"

namespace resil::json {

namespace detail {

// Messages are joined by the one function the options' messages use (not
// `a + b + c` on std::string, which trips g++ 12's -Wrestrict false positive
// at -O3, GCC bug 105329).
using resil::detail::concat;

}  // namespace detail

/// A configuration that cannot be used: where (a JSON path such as
/// `retry.backoff.cap` or `retry.retry_on[1]`, empty for the document itself)
/// and why. what() is "path: reason", prefixed with the file name when read by
/// load_config(). Derives from std::invalid_argument, like the policies'
/// own errors, so one catch takes both.
class config_error : public std::invalid_argument {
public:
    /// An error at `path` ("retry.max_attempts") for `reason`, in `source` (a
    /// file name; empty when none).
    config_error(std::string path, std::string reason, std::string source = {})
        : std::invalid_argument(compose(source, path, reason)),
          path_(std::move(path)),
          reason_(std::move(reason)),
          source_(std::move(source)) {}

    /// The JSON path of the offending value; empty for the whole document.
    [[nodiscard]] const std::string& path() const noexcept { return path_; }
    /// What is wrong with it, e.g. "must be in [1, 100], got 0".
    [[nodiscard]] const std::string& reason() const noexcept { return reason_; }
    /// The file it came from (load_config), or empty.
    [[nodiscard]] const std::string& source() const noexcept { return source_; }

private:
    static std::string compose(const std::string& source, const std::string& path, const std::string& reason) {
        return detail::concat({source, source.empty() ? "" : ": ", path, path.empty() ? "" : ": ", reason});
    }
    std::string path_;
    std::string reason_;
    std::string source_;
};

namespace detail {

/// `path.key`, or `path["key with spaces"]` when the key is not an identifier.
RESIL_DECL std::string join(std::string_view path, std::string_view key);

#if RESIL_DETAIL_BODIES
RESIL_DECL std::string join(std::string_view path, std::string_view key) {
    bool identifier = !key.empty() && !(key[0] >= '0' && key[0] <= '9');
    for (char c : key)
        identifier = identifier && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_');
    if (identifier) return path.empty() ? std::string(key) : concat({path, ".", key});
    const auto quoted = nlohmann::json(std::string(key)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return concat({path, "[", quoted, "]"});
}
#endif

/// Throws config_error(path, reason). Out of line and cold: the reader has
/// dozens of error paths, each instantiated for every member and JSON type,
/// and each would otherwise carry its own copy of the exception's making.
[[noreturn, gnu::noinline, gnu::cold]] inline void fail(std::string_view path, std::string reason) {
    throw config_error(std::string(path), std::move(reason));
}

/// `path[index]`.
inline std::string join(std::string_view path, std::size_t index) {
    return concat({path, "[", std::to_string(index), "]"});
}

}  // namespace detail
}  // namespace resil::json
