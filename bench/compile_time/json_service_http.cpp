// json_service.cpp's service through resil::http::client: its policies come
// from a JSON file (resil::http::load_client, resil/http/config_file.hpp).
// What scripts/compile_time.sh times against baseline_curl_retry_loop.cpp;
// with RESIL_SEPARATE_COMPILATION the file parses neither nlohmann/json nor
// the policies, and load_client is compiled once, in separate_source.cpp.
#include <resil/http/config_file.hpp>

#include <optional>
#include <string>

class inventory_client {
public:
    explicit inventory_client(const std::string& config_file) : http_(resil::http::load_client(config_file)) {}

    std::optional<std::string> item(const std::string& id) {
        auto out = http_.get("http://inventory.internal/items/" + id);
        if (!out) return std::nullopt;
        return std::move(out).body();
    }

private:
    resil::http::client http_;
};

std::optional<std::string> lookup(const std::string& id) {
    static inventory_client client{"inventory.json"};
    return client.item(id);
}
