//! The server's integration tests, in one test binary: a module per subject, one `support` tree
//! of servers, clients and data. One binary links once; its tests share the test threads.

// The servers run in this process: jemalloc, as in `ferry`, so that heap profiles have samples.
ferry_server::global_allocator!();

#[macro_use]
mod support;

mod cluster_key;
mod crash_kill9;
mod drain_sigterm;
mod faults;
mod heap_profiles;
mod hostile;
mod internal_names;
mod limits;
mod logs;
mod node_admin;
mod node_bad_input;
mod node_fence;
mod node_lifecycle;
mod node_md5_lanes;
mod node_multipart;
mod node_objects;
mod node_s3;
mod node_sendfile;
mod node_versions;
mod proxy_cors;
mod proxy_delete_bucket;
mod proxy_forward;
mod proxy_health;
mod proxy_layouts;
mod proxy_list;
mod proxy_no_retry;
mod proxy_rebalance;
mod proxy_reload;
mod proxy_resign_moto;
mod proxy_resign_oracle;
mod proxy_restarts;
mod proxy_s3;
mod proxy_tagging;
mod proxy_tls;
mod proxy_tls_backends;
mod proxy_uploads;
mod request_cpu;
mod sdk_acl;
mod sdk_buckets;
mod sdk_checksums;
mod sdk_cors;
mod sdk_large;
mod sdk_lifecycle;
mod sdk_list;
mod sdk_multipart;
mod sdk_object_lock;
mod sdk_objects;
mod sdk_policy;
mod sdk_post;
mod sdk_presign;
mod sdk_sigv2;
mod sdk_sse;
mod sdk_sse_copy;
mod sdk_sse_default;
mod sdk_sse_kms;
mod sdk_tagging;
mod sdk_unsupported;
mod sdk_users;
mod sdk_versioning;
mod sdk_wire;
mod store_full_disk;
mod store_lifecycle;
mod store_list;
mod store_modes;
mod store_multipart;
mod store_objects;
mod store_settings;
mod store_tagging;
mod store_version_ids;
mod store_versions;
