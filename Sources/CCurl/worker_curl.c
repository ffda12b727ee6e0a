#include <dlfcn.h>
#include <stdio.h>
#include <stddef.h>
#include "worker_curl.h"

static struct {
    CURLcode (*global_init)(long);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_setopt)(CURLM *, CURLMoption, ...);
    CURLMcode (*multi_wakeup)(CURLM *);
    CURLMcode (*multi_perform)(CURLM *, int *);
    CURLMsg *(*multi_info_read)(CURLM *, int *);
    CURLMcode (*multi_poll)(CURLM *, struct curl_waitfd *, unsigned int, int, int *);
    CURLMcode (*multi_add_handle)(CURLM *, CURL *);
    CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
    CURLMcode (*multi_cleanup)(CURLM *);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *);
    CURLcode (*easy_pause)(CURL *, int);
    const char *(*easy_strerror)(CURLcode);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
    curl_version_info_data *(*version_info)(CURLversion);
    CURLSH *(*share_init)(void);
    CURLSHcode (*share_setopt)(CURLSH *, CURLSHoption, ...);
    CURLSHcode (*share_cleanup)(CURLSH *);
} api;

const char *worker_curl_load(void) {
    // Lazy: the thirty-odd libraries libcurl pulls in bind what they call as they first call it,
    // as they do under the curl command, not all of it at the load (what is used is checked
    // below, by dlsym).
#if defined(__APPLE__)
    void *library = dlopen("libcurl.4.dylib", RTLD_LAZY | RTLD_LOCAL);
#else
    void *library = dlopen("libcurl.so.4", RTLD_LAZY | RTLD_LOCAL);
#endif
    if (!library) return dlerror();
#define LOAD(field, name) \
    if (!(*(void **)&api.field = dlsym(library, name))) return dlerror();
    // 7.80.0 first: CURLOPT_PREREQFUNCTION (the request-started hook) is the newest option used.
    LOAD(version_info, "curl_version_info")
    curl_version_info_data *info = api.version_info(CURLVERSION_NOW);
    if (!info || info->version_num < 0x075000) {
        static char old[160];
        snprintf(old, sizeof old, "libcurl %s is older than 7.80.0, which worker needs",
                 info && info->version ? info->version : "of an unknown version");
        return old;
    }
    LOAD(global_init, "curl_global_init")
    LOAD(multi_init, "curl_multi_init")
    LOAD(multi_setopt, "curl_multi_setopt")
    LOAD(multi_wakeup, "curl_multi_wakeup")
    LOAD(multi_perform, "curl_multi_perform")
    LOAD(multi_info_read, "curl_multi_info_read")
    LOAD(multi_poll, "curl_multi_poll")
    LOAD(multi_add_handle, "curl_multi_add_handle")
    LOAD(multi_remove_handle, "curl_multi_remove_handle")
    LOAD(multi_cleanup, "curl_multi_cleanup")
    LOAD(easy_init, "curl_easy_init")
    LOAD(easy_cleanup, "curl_easy_cleanup")
    LOAD(easy_pause, "curl_easy_pause")
    LOAD(easy_strerror, "curl_easy_strerror")
    LOAD(easy_setopt, "curl_easy_setopt")
    LOAD(easy_getinfo, "curl_easy_getinfo")
    LOAD(slist_append, "curl_slist_append")
    LOAD(slist_free_all, "curl_slist_free_all")
    LOAD(share_init, "curl_share_init")
    LOAD(share_setopt, "curl_share_setopt")
    LOAD(share_cleanup, "curl_share_cleanup")
#undef LOAD
    return NULL;
}

CURLcode worker_curl_global_init(long flags) { return api.global_init(flags); }
CURLM *worker_curl_multi_init(void) { return api.multi_init(); }
CURLMcode worker_curl_multi_set_long(CURLM *multi, CURLMoption option, long value) {
    return api.multi_setopt(multi, option, value);
}
CURLMcode worker_curl_multi_wakeup(CURLM *multi) { return api.multi_wakeup(multi); }
CURLMcode worker_curl_multi_perform(CURLM *multi, int *running) { return api.multi_perform(multi, running); }
CURLMsg *worker_curl_multi_info_read(CURLM *multi, int *left) { return api.multi_info_read(multi, left); }
CURLMcode worker_curl_multi_poll(CURLM *multi, int timeout_ms) {
    return api.multi_poll(multi, NULL, 0, timeout_ms, NULL);
}
CURLMcode worker_curl_multi_add_handle(CURLM *multi, CURL *easy) { return api.multi_add_handle(multi, easy); }
CURLMcode worker_curl_multi_remove_handle(CURLM *multi, CURL *easy) { return api.multi_remove_handle(multi, easy); }
CURLMcode worker_curl_multi_cleanup(CURLM *multi) { return api.multi_cleanup(multi); }

CURL *worker_curl_easy_init(void) { return api.easy_init(); }
void worker_curl_easy_cleanup(CURL *easy) { api.easy_cleanup(easy); }
CURLcode worker_curl_easy_pause(CURL *easy, int bitmask) { return api.easy_pause(easy, bitmask); }
const char *worker_curl_easy_strerror(CURLcode code) { return api.easy_strerror(code); }

CURLcode worker_curl_set_long(CURL *easy, CURLoption option, long value) {
    return api.easy_setopt(easy, option, value);
}
CURLcode worker_curl_set_pointer(CURL *easy, CURLoption option, void *value) {
    return api.easy_setopt(easy, option, value);
}
CURLcode worker_curl_set_string(CURL *easy, CURLoption option, const char *value) {
    return api.easy_setopt(easy, option, value);
}
CURLcode worker_curl_set_off_t(CURL *easy, CURLoption option, curl_off_t value) {
    return api.easy_setopt(easy, option, value);
}
CURLcode worker_curl_set_data_callback(CURL *easy, CURLoption option, worker_curl_data_callback callback) {
    return api.easy_setopt(easy, option, callback);
}
CURLcode worker_curl_set_prereq_callback(CURL *easy, worker_curl_prereq_callback callback) {
    return api.easy_setopt(easy, CURLOPT_PREREQFUNCTION, callback);
}
CURLcode worker_curl_set_ssh_key_callback(CURL *easy, worker_curl_ssh_key_callback callback) {
    return api.easy_setopt(easy, CURLOPT_SSH_KEYFUNCTION, callback);
}
curl_off_t worker_curl_info_off_t(CURL *easy, CURLINFO info) {
    curl_off_t value = -1;
    if (api.easy_getinfo(easy, info, &value) != CURLE_OK) return -1;
    return value;
}
long worker_curl_info_long(CURL *easy, CURLINFO info) {
    long value = 0;
    api.easy_getinfo(easy, info, &value);
    return value;
}
void *worker_curl_info_private(CURL *easy) {
    char *value = NULL;
    api.easy_getinfo(easy, CURLINFO_PRIVATE, &value);
    return value;
}

CURLSH *worker_curl_share_init(void) { return api.share_init(); }
CURLSHcode worker_curl_share_set_long(CURLSH *share, CURLSHoption option, long value) {
    return api.share_setopt(share, option, value);
}
CURLSHcode worker_curl_share_cleanup(CURLSH *share) { return api.share_cleanup(share); }

struct curl_slist *worker_curl_slist_append(struct curl_slist *list, const char *line) {
    return api.slist_append(list, line);
}
void worker_curl_slist_free_all(struct curl_slist *list) { api.slist_free_all(list); }

const char *worker_curl_default_ca_file(void) {
    curl_version_info_data *info = api.version_info(CURLVERSION_NOW);
    return info ? info->cainfo : NULL;
}
const char *worker_curl_default_ca_path(void) {
    curl_version_info_data *info = api.version_info(CURLVERSION_NOW);
    return info ? info->capath : NULL;
}
unsigned int worker_curl_version_number(void) {
    curl_version_info_data *info = api.version_info(CURLVERSION_NOW);
    return info ? info->version_num : 0;
}
