// resil/json/service_config.hpp — a service file: every dependency of a
// service, by name, and the Redis their shared quotas use, in one JSON
// document; read strictly, with the file and the JSON path in every error.
//
//   // service.json:
//   // {"redis": {"host": "redis.internal", "port": 6379, "on_failure": "fail_open"},
//   //  "dependencies": {
//   //    "inventory": {"endpoints": [{"address": "http://inv-1:8080"}, {"address": "http://inv-2:8080"}]},
//   //    "pricing": {"endpoints": [{"address": "https://api.pricing.example"}],
//   //                "pacing": {"rate": 20, "burst": 5},
//   //                "shared_quota": {"rate": 50, "burst": 100}}}}
//   auto service = resil::json::load_service_config("service.json");       // throws config_error
//   auto pricing = resil::json::dependency_options_of(service, "pricing");  // name "pricing", its options
//   // or, in one call: resil::json::load_dependency_options("service.json", "pricing")
//   // "service.json: dependencies.pricing.endpoints[0].weight: must be in [1, 10000], got 0"
//   // "service.json: dependencies: unknown dependency "pricng"; did you mean "pricing"? (expected one of: ...)"
//
// A dependency's section is its http::dependency_options (json/dependency.hpp)
// without "name": its key in "dependencies" is its name (a "name" key, if
// present, must repeat it). Its "shared_quota" starts from the "redis"
// section (every key but "key"), its "key" defaulting to the dependency's
// name; keys it gives win.
//
// Needs libcurl's headers (a dependency's transport is resil::curl's): not
// in resil/json.hpp; link the resil::json and resil::curl CMake targets.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "../detail/platform.hpp"
#include "../http/dependency_options.hpp"
#include "../redis/options.hpp"
#include "error.hpp"

#if RESIL_DETAIL_BODIES
#include <nlohmann/json.hpp>

#include <array>
#include <utility>
#include <vector>

#include "dependency.hpp"
#include "detail/file_text.hpp"
#include "fields.hpp"
#include "parse.hpp"
#include "read.hpp"
#include "redis.hpp"
#include "write.hpp"
#else
// With RESIL_SEPARATE_COMPILATION, the reader and the writer are compiled
// once for nlohmann::json and nlohmann::ordered_json
// (resil/http/separate_compilation.hpp): a file that loads a service file and
// takes its dependencies' options does not parse nlohmann/json.hpp at all.
// (Reading a dependency's section by hand, resil::json::read, needs
// resil/json/dependency.hpp.)
#include <nlohmann/json_fwd.hpp>
#endif

namespace resil::json {

/// A service file's contents (see the banner). A plain value: copy it, keep
/// it, read it from any thread.
struct service_config {
    /// "redis": the Redis every dependency's "shared_quota" starts from
    /// (host, port, timeouts, connections, on_failure, key_prefix, ...),
    /// checked as resil::redis::rate_limiter_options are. Empty when the
    /// file has none: each shared_quota then starts from the defaults.
    std::optional<resil::redis::rate_limiter_options> redis{};
    /// "dependencies": each dependency by its name, with `name` filled in
    /// from its key and its shared_quota merged over `redis`.
    std::map<std::string, http::dependency_options, std::less<>> dependencies{};
    /// The file it was read from (load_service_config), named in the
    /// errors of dependency_options_of; empty when read from text.
    std::string source{};
};

#if !RESIL_DETAIL_BODIES
template <class Json>
[[nodiscard]] service_config read_service_config(const Json& j, std::string_view path = {});
template <class Json = nlohmann::json>
[[nodiscard]] service_config parse_service_config(std::string_view text);
template <class Json = nlohmann::json>
[[nodiscard]] service_config load_service_config(const std::filesystem::path& file);
template <class Json = nlohmann::json>
[[nodiscard]] http::dependency_options load_dependency_options(const std::filesystem::path& file,
                                                               std::string_view name);
template <class Json = nlohmann::ordered_json>
[[nodiscard]] Json write(const service_config& config);
#endif

/// The options of the dependency called `name`, ready to build it from
/// (resil::http::dependency). Throws config_error for a name the service
/// lacks, with "did you mean" and the names it has.
[[nodiscard]] RESIL_DECL const http::dependency_options& dependency_options_of(const service_config& config,
                                                                               std::string_view name);

#if RESIL_DETAIL_BODIES
namespace detail {

/// The keys of a service file.
inline constexpr std::array<std::string_view, 2> service_keys{"redis", "dependencies"};

/// The "redis" section: a rate limiter's options, every key but "key"
/// (each dependency names its own), checked with a stand-in key.
template <class Json>
resil::redis::rate_limiter_options read_shared_redis(const Json& j, const std::string& path) {
    if (j.is_object() && j.find("key") != j.end())
        fail(join(path, "key"), "must be absent: each dependency's \"shared_quota\" names its own key (by default "
                                "the dependency's name)");
    resil::redis::rate_limiter_options stand_in{};
    stand_in.key = "service";
    auto out = read_checked<resil::redis::rate_limiter_options>(j, path, std::move(stand_in));
    out.key.clear();
    return out;
}

/// One dependency's section, named `name` (its key), over `shared` Redis.
template <class Json>
http::dependency_options read_dependency_section(
    const Json& j, const std::string& path, const std::string& name,
    const std::optional<resil::redis::rate_limiter_options>& shared) {
    http::dependency_options seed{};
    seed.name = name;
    if (j.is_object()) {
        if (const auto it = j.find("name"); it != j.end() && !(it->is_string() && it->template get<std::string>() == name))
            fail(join(path, "name"), concat({"must be the dependency's key, \"", name, "\", or absent, got ", shown(*it)}));
        if (const auto it = j.find("shared_quota"); it != j.end() && !it->is_null()) {
            seed.shared_quota = shared.value_or(resil::redis::rate_limiter_options{});
            seed.shared_quota->key = name;
        }
    }
    return read_checked<http::dependency_options>(j, path, std::move(seed));
}

/// "path: unknown dependency "x"; did you mean "y"? (expected one of: ...)".
[[noreturn]] inline void unknown_dependency(const service_config& config, std::string_view name) {
    std::vector<std::string_view> known;
    for (const auto& [k, v] : config.dependencies) known.push_back(k);
    std::string why = unknown_key(name, known);
    constexpr std::string_view generic = "unknown key";
    if (std::string_view(why).starts_with(generic))
        why = concat({"unknown dependency \"", name, "\"", std::string_view(why).substr(generic.size())});
    throw config_error("dependencies", std::move(why), config.source);
}

}  // namespace detail

/// A service_config read from `j` (see the banner); `path` names `j` in
/// error messages. Requires "dependencies", an object of at least one
/// dependency; "redis" is optional. Throws config_error.
template <class Json>
[[nodiscard]] service_config read_service_config(const Json& j, std::string_view path = {}) {
    const detail::object_reader<Json> r(j, std::string(path), detail::service_keys);
    service_config out;
    if (const auto* redis = r.find("redis"); redis != nullptr && !redis->is_null())
        out.redis = detail::read_shared_redis(*redis, r.path("redis"));
    const auto* dependencies = r.find("dependencies");
    if (dependencies == nullptr) detail::fail(r.path("dependencies"), "is required: an object of dependencies by name");
    const auto at = r.path("dependencies");
    if (!dependencies->is_object())
        detail::fail(at, detail::concat({"must be an object of dependencies by name, got ", detail::shown(*dependencies)}));
    if (dependencies->empty()) detail::fail(at, "must name at least one dependency, got none");
    for (auto it = dependencies->begin(); it != dependencies->end(); ++it)
        out.dependencies.emplace(it.key(),
                                 detail::read_dependency_section(it.value(), detail::join(at, it.key()), it.key(), out.redis));
    return out;
}

/// Parses `text` (strictly: resil::json::parse) and reads a service_config from it.
template <class Json = nlohmann::json>
[[nodiscard]] service_config parse_service_config(std::string_view text) {
    return read_service_config(parse<Json>(text));
}

/// Reads a service_config from a file. Errors carry the file name in
/// source() and what(); so do dependency_options_of's on the result.
template <class Json = nlohmann::json>
[[nodiscard]] service_config load_service_config(const std::filesystem::path& file) {
    const auto text = detail::file_text(file);
    try {
        auto out = parse_service_config<Json>(text);
        out.source = file.string();
        return out;
    } catch (const config_error& e) {
        throw config_error(e.path(), e.reason(), file.string());
    }
}

RESIL_DECL const http::dependency_options& dependency_options_of(const service_config& config, std::string_view name) {
    const auto it = config.dependencies.find(name);
    if (it == config.dependencies.end()) detail::unknown_dependency(config, name);
    return it->second;
}

/// One call: the options of the dependency `name` of the service file `file`.
template <class Json = nlohmann::json>
[[nodiscard]] http::dependency_options load_dependency_options(const std::filesystem::path& file,
                                                               std::string_view name) {
    const auto config = load_service_config<Json>(file);
    return dependency_options_of(config, name);
}

/// {"redis": ... (without "key"; left out when empty), "dependencies":
/// {name: the dependency's keys without "name", ...}}, which
/// read_service_config reads back to the same configuration. Secrets are
/// left out, as write() leaves them out everywhere.
template <class Json = nlohmann::ordered_json>
[[nodiscard]] Json write(const service_config& config) {
    Json j = Json::object();
    if (config.redis) {
        auto redis = write<Json>(*config.redis);
        redis.erase("key");
        j["redis"] = std::move(redis);
    }
    Json dependencies = Json::object();
    for (const auto& [name, options] : config.dependencies) {
        auto section = write<Json>(options);
        section.erase("name");
        dependencies[name] = std::move(section);
    }
    j["dependencies"] = std::move(dependencies);
    return j;
}

#endif  // RESIL_DETAIL_BODIES

}  // namespace resil::json
