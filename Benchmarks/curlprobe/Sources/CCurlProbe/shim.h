#include <curl/curl.h>
#include <openssl/sha.h>

// curl_easy_setopt and curl_multi_setopt are variadic: Swift calls these typed wrappers.
static inline CURLcode probe_easy_long(CURL *easy, CURLoption option, long value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLcode probe_easy_pointer(CURL *easy, CURLoption option, void *value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLcode probe_easy_string(CURL *easy, CURLoption option, const char *value) {
    return curl_easy_setopt(easy, option, value);
}
typedef size_t (*probe_write_callback)(char *, size_t, size_t, void *);
static inline CURLcode probe_easy_write(CURL *easy, probe_write_callback callback) {
    return curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, callback);
}
static inline CURLMcode probe_multi_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}
static inline long probe_response_code(CURL *easy) {
    long code = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
    return code;
}
static inline void *probe_private(CURL *easy) {
    char *value = 0;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, &value);
    return value;
}
