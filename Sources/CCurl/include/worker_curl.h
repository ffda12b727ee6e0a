#ifndef WORKER_CURL_H
#define WORKER_CURL_H

// libcurl, loaded when the first download needs it (dlopen of libcurl.so.4) rather than linked:
// a run that downloads nothing (a warm sync, status, plan, verify) never loads libcurl and the
// thirty-odd libraries it pulls in (OpenSSL, nghttp2, GSSAPI, LDAP, …), which cost every start
// about 5 ms. Swift calls only these functions; the types and constants are libcurl's own.
#include <curl/curl.h>

/// Loads libcurl and its functions, once; NULL on success, else why it could not.
const char *worker_curl_load(void);

CURLcode worker_curl_global_init(long flags);
CURLM *worker_curl_multi_init(void);
CURLMcode worker_curl_multi_set_long(CURLM *multi, CURLMoption option, long value);
CURLMcode worker_curl_multi_wakeup(CURLM *multi);
CURLMcode worker_curl_multi_perform(CURLM *multi, int *running);
CURLMsg *worker_curl_multi_info_read(CURLM *multi, int *left);
CURLMcode worker_curl_multi_poll(CURLM *multi, int timeout_ms);
CURLMcode worker_curl_multi_add_handle(CURLM *multi, CURL *easy);
CURLMcode worker_curl_multi_remove_handle(CURLM *multi, CURL *easy);
CURLMcode worker_curl_multi_cleanup(CURLM *multi);

CURL *worker_curl_easy_init(void);
void worker_curl_easy_cleanup(CURL *easy);
CURLcode worker_curl_easy_pause(CURL *easy, int bitmask);
const char *worker_curl_easy_strerror(CURLcode code);

// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: typed wrappers.
typedef size_t (*worker_curl_data_callback)(char *, size_t, size_t, void *);
typedef int (*worker_curl_prereq_callback)(void *, char *, char *, int, int);
CURLcode worker_curl_set_long(CURL *easy, CURLoption option, long value);
CURLcode worker_curl_set_pointer(CURL *easy, CURLoption option, void *value);
CURLcode worker_curl_set_string(CURL *easy, CURLoption option, const char *value);
CURLcode worker_curl_set_off_t(CURL *easy, CURLoption option, curl_off_t value);
CURLcode worker_curl_set_data_callback(CURL *easy, CURLoption option, worker_curl_data_callback callback);
CURLcode worker_curl_set_prereq_callback(CURL *easy, worker_curl_prereq_callback callback);
/// CURLOPT_SSH_KEYFUNCTION: how an SFTP host's key compares with the known_hosts file.
typedef int (*worker_curl_ssh_key_callback)(CURL *, const struct curl_khkey *, const struct curl_khkey *, enum curl_khmatch,
                                            void *);
CURLcode worker_curl_set_ssh_key_callback(CURL *easy, worker_curl_ssh_key_callback callback);
long worker_curl_info_long(CURL *easy, CURLINFO info);
/// A CURLINFO_*_T value; -1 when libcurl does not know it.
curl_off_t worker_curl_info_off_t(CURL *easy, CURLINFO info);
void *worker_curl_info_private(CURL *easy);

// A share (one per engine, used from its thread only: no lock callbacks) keeps TLS sessions
// across the engine's handles, which are new for every transfer.
CURLSH *worker_curl_share_init(void);
CURLSHcode worker_curl_share_set_long(CURLSH *share, CURLSHoption option, long value);
CURLSHcode worker_curl_share_cleanup(CURLSH *share);

struct curl_slist *worker_curl_slist_append(struct curl_slist *list, const char *line);
void worker_curl_slist_free_all(struct curl_slist *list);

/// The CA bundle / folder libcurl was built to trust by default, or NULL.
const char *worker_curl_default_ca_file(void);
const char *worker_curl_default_ca_path(void);

/// The loaded libcurl's version as 0xXXYYZZ (8.1.0 is 0x080100).
unsigned int worker_curl_version_number(void);

#endif
