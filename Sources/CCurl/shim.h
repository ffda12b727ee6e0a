#include <curl/curl.h>

// curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are variadic, which Swift cannot
// call: these typed wrappers are the fetch stage's only way in.

typedef size_t (*worker_curl_data_callback)(char *, size_t, size_t, void *);
typedef int (*worker_curl_prereq_callback)(void *, char *, char *, int, int);

static inline CURLcode worker_curl_set_long(CURL *easy, CURLoption option, long value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLcode worker_curl_set_pointer(CURL *easy, CURLoption option, void *value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLcode worker_curl_set_string(CURL *easy, CURLoption option, const char *value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLcode worker_curl_set_data_callback(CURL *easy, CURLoption option, worker_curl_data_callback callback) {
    return curl_easy_setopt(easy, option, callback);
}
static inline CURLcode worker_curl_set_prereq_callback(CURL *easy, worker_curl_prereq_callback callback) {
    return curl_easy_setopt(easy, CURLOPT_PREREQFUNCTION, callback);
}
static inline CURLMcode worker_curl_multi_set_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}
static inline long worker_curl_info_long(CURL *easy, CURLINFO info) {
    long value = 0;
    curl_easy_getinfo(easy, info, &value);
    return value;
}
static inline void *worker_curl_info_private(CURL *easy) {
    char *value = 0;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, &value);
    return value;
}
/// The CA bundle libcurl was built to trust by default, or NULL.
static inline const char *worker_curl_default_ca_file(void) {
    curl_version_info_data *info = curl_version_info(CURLVERSION_NOW);
    return info ? info->cainfo : 0;
}
/// The CA folder libcurl was built to trust by default, or NULL.
static inline const char *worker_curl_default_ca_path(void) {
    curl_version_info_data *info = curl_version_info(CURLVERSION_NOW);
    return info ? info->capath : 0;
}
