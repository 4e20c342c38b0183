//! SigV2 (boto3 with `signature_version="s3"`: header auth and presigned URLs) and
//! virtual-hosted-style addressing (aws-sdk-s3 with its default `force_path_style(false)`, and
//! boto3 with `addressing_style="virtual"`), on a node and through the proxy; the proxy's
//! re-signing setups; raw-HTTP edge cases.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use aws_sdk_s3::Client;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use aws_smithy_http_client::proxy::ProxyConfig;
use aws_smithy_http_client::{Builder, Connector};
use ferry_core::http::Header;
use ferry_core::s3::sigv2;
use ferry_core::s3::sigv4::RequestParts;
use ferry_core::time::DateTime;
use ferry_server::RuntimeKind;

use crate::support::http::{Conn, Response, now};
use crate::support::proxy::{Auth, Setup};
use crate::support::sdk::{self, Options, Target, TestNode, body_bytes, show};
use crate::support::{ACCESS_KEY, SECRET_KEY};

on_every_target!(
    boto3_sigv2_header_and_presigned,
    sigv2_refused_when_turned_off,
    sdk_virtual_hosted,
    boto3_virtual_hosted_sigv2_and_sigv4,
    raw_sigv2_edges,
    aws_cli_v1_and_s3cmd_sign_with_sigv2,
    a_subresource_added_to_a_signed_url_is_refused,
);

on_both_runtimes!(
    proxy_resign_sigv2_and_virtual,
    proxy_own_keys_sigv2_and_virtual
);

/// The base domain of the virtual-hosted tests; it resolves nowhere: clients are pointed at
/// 127.0.0.1 whatever the host (an HTTP forward proxy setting for the Rust SDK, a patched
/// `getaddrinfo` for boto3).
const DOMAIN: &str = "s3.ferry.test";

fn args(endpoint: String) -> Vec<String> {
    vec![endpoint, ACCESS_KEY.to_owned(), SECRET_KEY.to_owned()]
}

/// Shared by the boto3 scripts: clients, error checks, a `getaddrinfo` sending DOMAIN and its
/// sub-domains to 127.0.0.1.
const PRELUDE: &str = r#"
import socket, sys, urllib.request, urllib.error
import boto3
from botocore.config import Config
from botocore.exceptions import ClientError
ep, ak, sk = sys.argv[1:4]
DOMAIN = "s3.ferry.test"
_gai = socket.getaddrinfo
def _local(host, *a, **k):
    if isinstance(host, str) and (host == DOMAIN or host.endswith("." + DOMAIN)):
        host = "127.0.0.1"
    return _gai(host, *a, **k)
socket.getaddrinfo = _local
def client(sig="s3", style="path", secret=None, endpoint=None):
    return boto3.client("s3", endpoint_url=endpoint or ep, aws_access_key_id=ak,
                        aws_secret_access_key=secret or sk, region_name="us-east-1",
                        config=Config(signature_version=sig, s3={"addressing_style": style},
                                      retries={"max_attempts": 1}))
def fails(f, status, code, message=None):
    try:
        f()
    except ClientError as e:
        got = (e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"])
        assert got == (status, code), e.response
        if message:
            assert message in e.response["Error"].get("Message", ""), e.response
    else:
        raise SystemExit("no error")
def url_fails(url, status, code, message=None, method="GET"):
    try:
        urllib.request.urlopen(urllib.request.Request(url, method=method))
    except urllib.error.HTTPError as e:
        body = e.read().decode()
        assert e.code == status and ("<Code>%s</Code>" % code) in body, (e.code, body)
        if message:
            assert message in body, body
    else:
        raise SystemExit("no error: " + url)
"#;

/// The SigV2 exercise: header auth through the operations whose sub-resources are signed
/// (uploads, partNumber, uploadId, delete, response-*), copies (x-amz-copy-source), presigned
/// GET and PUT, and the refusals.
const SIGV2_SCRIPT: &str = r#"
c = client("s3")
c.create_bucket(Bucket="sig-v2")
key = "dir/a b+c.txt"
c.put_object(Bucket="sig-v2", Key=key, Body=b"hello v2", ContentType="text/plain",
             Metadata={"who": "boto"})
r = c.get_object(Bucket="sig-v2", Key=key, ResponseContentType="application/x-test",
                 ResponseContentDisposition="attachment; filename=\"x y\"")
assert r["Body"].read() == b"hello v2"
assert r["ContentType"] == "application/x-test", r
assert r["Metadata"] == {"who": "boto"}, r
assert c.head_object(Bucket="sig-v2", Key=key)["ContentLength"] == 8
assert [o["Key"] for o in c.list_objects_v2(Bucket="sig-v2", Prefix="dir/")["Contents"]] == [key]
assert [o["Key"] for o in c.list_objects(Bucket="sig-v2")["Contents"]] == [key]
assert "sig-v2" in [b["Name"] for b in c.list_buckets()["Buckets"]]
up = c.create_multipart_upload(Bucket="sig-v2", Key="mp")["UploadId"]
big = b"p" * (5 << 20)
e1 = c.upload_part(Bucket="sig-v2", Key="mp", UploadId=up, PartNumber=1, Body=big)["ETag"]
e2 = c.upload_part(Bucket="sig-v2", Key="mp", UploadId=up, PartNumber=2, Body=b"tail")["ETag"]
assert [p["PartNumber"] for p in c.list_parts(Bucket="sig-v2", Key="mp", UploadId=up)["Parts"]] == [1, 2]
c.complete_multipart_upload(Bucket="sig-v2", Key="mp", UploadId=up, MultipartUpload={
    "Parts": [{"ETag": e1, "PartNumber": 1}, {"ETag": e2, "PartNumber": 2}]})
assert c.get_object(Bucket="sig-v2", Key="mp", Range="bytes=5242878-")["Body"].read() == b"pptail"
c.copy_object(Bucket="sig-v2", Key="copy", CopySource={"Bucket": "sig-v2", "Key": key})
assert c.get_object(Bucket="sig-v2", Key="copy")["Body"].read() == b"hello v2"
d = c.delete_objects(Bucket="sig-v2", Delete={"Objects": [{"Key": "copy"}, {"Key": "mp"}]})
assert sorted(o["Key"] for o in d["Deleted"]) == ["copy", "mp"], d

# Presigned URLs (query-string authentication).
url = c.generate_presigned_url("get_object", Params={"Bucket": "sig-v2", "Key": key}, ExpiresIn=300)
assert "AWSAccessKeyId=" in url and "Expires=" in url and "Signature=" in url, url
assert "X-Amz-" not in url, url
assert urllib.request.urlopen(url).read() == b"hello v2"
# The Content-Type is signed (urllib would send one of its own otherwise).
put = c.generate_presigned_url("put_object", Params={"Bucket": "sig-v2", "Key": "by-url",
                               "ContentType": "text/x-mine"}, ExpiresIn=300)
urllib.request.urlopen(urllib.request.Request(put, data=b"put by url", method="PUT",
                                              headers={"Content-Type": "text/x-mine"})).read()
r = c.get_object(Bucket="sig-v2", Key="by-url")
assert (r["Body"].read(), r["ContentType"]) == (b"put by url", "text/x-mine"), r
try:
    urllib.request.urlopen(urllib.request.Request(put, data=b"other", method="PUT",
                                                  headers={"Content-Type": "text/plain"}))
except urllib.error.HTTPError as e:
    assert e.code == 403 and "<Code>SignatureDoesNotMatch</Code>" in e.read().decode()
else:
    raise SystemExit("a changed Content-Type was accepted")
c.delete_object(Bucket="sig-v2", Key="by-url")

# Refusals: another secret, a tampered signature, a URL moved to another key, expired.
bad = client("s3", secret=sk + "x")
fails(lambda: bad.get_object(Bucket="sig-v2", Key=key), 403, "SignatureDoesNotMatch")
fails(lambda: bad.put_object(Bucket="sig-v2", Key="no", Body=b"no"), 403, "SignatureDoesNotMatch")
sig = url.split("Signature=")[1].split("&")[0]
tampered = url.replace("Signature=" + sig, "Signature=" + ("B" if sig[0] == "A" else "A") + sig[1:])
url_fails(tampered, 403, "SignatureDoesNotMatch")
assert "/dir/a%20b" in url, url
url_fails(url.replace("/dir/a%20b", "/dir/a%20c"), 403, "SignatureDoesNotMatch")
url_fails(url.replace("/sig-v2/", "/sig-v3/"), 403, "SignatureDoesNotMatch")
expired = c.generate_presigned_url("get_object", Params={"Bucket": "sig-v2", "Key": key},
                                   ExpiresIn=-60)
url_fails(expired, 403, "AccessDenied", "Request has expired")
assert c.list_objects_v2(Bucket="sig-v2")["KeyCount"] == 1
print("ok")
"#;

/// A sub-resource the router dispatches on, added to a SigV2 presigned URL, is refused `403
/// SignatureDoesNotMatch` (SigV2 signs every one of them): a DeleteBucket URL does not become
/// a DeleteBucketEncryption, a ListObjects URL a GetBucketPolicyStatus, a GetObject URL a
/// request for its attributes; the encryption and the objects stay. The URLs as made still
/// work. botocore's SigV2 leaves `encryption` out of what it signs: refused, as AWS refuses
/// it (SigV4 serves such clients).
const SUBRESOURCE_SCRIPT: &str = r#"
c = client("s3")
v4 = client("s3v4")
c.create_bucket(Bucket="sig-sub")
aes = {"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]}
v4.put_bucket_encryption(Bucket="sig-sub", ServerSideEncryptionConfiguration=aes)
c.put_bucket_policy(Bucket="sig-sub", Policy='{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::sig-sub/*"}]}')
c.put_object(Bucket="sig-sub", Key="k", Body=b"secret")
def presign(op, **params):
    url = c.generate_presigned_url(op, Params=dict(Bucket="sig-sub", **params), ExpiresIn=300)
    assert "Signature=" in url and "X-Amz-" not in url, url
    return url
delete_bucket = presign("delete_bucket")
for extra in ["&encryption", "&encryption=", "&policy", "&x-ferry-fence=t&lease-seconds=0"]:
    url_fails(delete_bucket + extra, 403, "SignatureDoesNotMatch", method="DELETE")
assert v4.get_bucket_encryption(Bucket="sig-sub")["ServerSideEncryptionConfiguration"]["Rules"][0][
    "ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
assert c.get_bucket_policy(Bucket="sig-sub")["Policy"]
list_objects = presign("list_objects")
for extra in ["&policyStatus", "&encryption", "&object-lock", "&ownershipControls"]:
    url_fails(list_objects + extra, 403, "SignatureDoesNotMatch")
get_object = presign("get_object", Key="k")
for extra in ["&policyStatus", "&attributes", "&retention", "&legal-hold", "&publicAccessBlock"]:
    url_fails(get_object + extra, 403, "SignatureDoesNotMatch")
# The URLs as signed.
assert urllib.request.urlopen(get_object).read() == b"secret"
assert b"<Key>k</Key>" in urllib.request.urlopen(list_objects).read()
url_fails(delete_bucket, 409, "BucketNotEmpty", method="DELETE")
fails(lambda: c.put_bucket_encryption(Bucket="sig-sub", ServerSideEncryptionConfiguration=aes),
      403, "SignatureDoesNotMatch")
c.delete_object(Bucket="sig-sub", Key="k")
assert urllib.request.urlopen(urllib.request.Request(delete_bucket, method="DELETE")).status == 204
print("ok")
"#;

async fn a_subresource_added_to_a_signed_url_is_refused(target: Target) {
    let n = TestNode::start(target);
    crate::support::sdk::run_python(with_prelude(SUBRESOURCE_SCRIPT), args(n.endpoint())).await;
}

/// boto3 signing with SigV2 (header auth and presigned URLs) against a node or the proxy.
async fn boto3_sigv2_header_and_presigned(target: Target) {
    let n = TestNode::start(target);
    crate::support::sdk::run_python(with_prelude(SIGV2_SCRIPT), args(n.endpoint())).await;
}

/// [`PRELUDE`] followed by `script`.
fn with_prelude(script: &str) -> String {
    format!("{PRELUDE}{script}")
}

/// With SigV2 turned off, SigV2 requests and URLs are refused with 403 AccessDenied, and SigV4
/// still works.
async fn sigv2_refused_when_turned_off(target: Target) {
    let n = TestNode::start_with(
        target,
        Options {
            sigv2: false,
            ..Options::default()
        },
    );
    n.bucket("v4only").await;
    n.put("v4only", "k", "sigv4 data").await;
    const SCRIPT: &str = r#"
c = client("s3")
msg = "Signature Version 2 is turned off"
fails(lambda: c.get_object(Bucket="v4only", Key="k"), 403, "AccessDenied", msg)
fails(lambda: c.put_object(Bucket="v4only", Key="k2", Body=b"x"), 403, "AccessDenied", msg)
url = c.generate_presigned_url("get_object", Params={"Bucket": "v4only", "Key": "k"})
url_fails(url, 403, "AccessDenied", msg)
v4 = client("s3v4")
assert v4.get_object(Bucket="v4only", Key="k")["Body"].read() == b"sigv4 data"
url = v4.generate_presigned_url("get_object", Params={"Bucket": "v4only", "Key": "k"})
assert urllib.request.urlopen(url).read() == b"sigv4 data"
print("ok")
"#;
    crate::support::sdk::run_python(with_prelude(SCRIPT), args(n.endpoint())).await;
    assert_eq!(n.get("v4only", "k").await, b"sigv4 data");
}

/// The URIs an SDK client sent (to check it really addressed buckets by host).
#[derive(Debug, Clone, Default)]
struct UriRecorder(Arc<Mutex<Vec<String>>>);

impl aws_sdk_s3::config::Intercept for UriRecorder {
    fn name(&self) -> &'static str {
        "UriRecorder"
    }

    fn read_before_transmit(
        &self,
        context: &aws_sdk_s3::config::interceptors::BeforeTransmitInterceptorContextRef<'_>,
        _components: &aws_sdk_s3::config::RuntimeComponents,
        _cfg: &mut aws_sdk_s3::config::ConfigBag,
    ) -> Result<(), aws_sdk_s3::error::BoxError> {
        let uri = context.request().uri().to_owned();
        self.0.lock().expect("recorder lock").push(uri);
        Ok(())
    }
}

/// An SDK client for `http://DOMAIN:PORT` with the SDK's default virtual-hosted addressing.
/// `DOMAIN` resolves nowhere, so the SDK's HTTP client goes through `addr` as its HTTP forward
/// proxy: it connects to 127.0.0.1 and sends each request as the SDK made it, in absolute form
/// (`GET http://BUCKET.DOMAIN:PORT/key`, `Host: BUCKET.DOMAIN:PORT`), which the server reads
/// as it reads the Host header.
fn virtual_client(addr: SocketAddr) -> (Client, UriRecorder) {
    let proxy = format!("http://{addr}");
    let http = Builder::new().build_with_connector_fn(move |settings, components| {
        let mut b = Connector::builder();
        b.set_connector_settings(settings.cloned());
        if let Some(c) = components {
            b.set_sleep_impl(c.sleep_impl());
        }
        let proxy = ProxyConfig::http(proxy.as_str()).expect("proxy URL");
        b.proxy_config(proxy).build_http()
    });
    let rec = UriRecorder::default();
    let conf = sdk::config(addr)
        .endpoint_url(format!("http://{DOMAIN}:{}", addr.port()))
        .force_path_style(false)
        .http_client(http)
        .interceptor(rec.clone())
        .build();
    (Client::from_conf(conf), rec)
}

/// aws-sdk-s3 with virtual-hosted-style addressing: buckets named by the Host, a Host equal
/// to the domain is path-style (ListBuckets), and path-style keeps working beside it.
async fn sdk_virtual_hosted(target: Target) {
    let n = TestNode::start_with(
        target,
        Options {
            domains: &[DOMAIN],
            ..Options::default()
        },
    );
    let (c, rec) = virtual_client(n.addr);
    let port = n.addr.port();
    c.create_bucket()
        .bucket("vhost")
        .send()
        .await
        .unwrap_or_else(|e| panic!("create bucket: {}", show(&e)));
    let last = |rec: &UriRecorder| rec.0.lock().expect("lock").last().cloned();
    assert_eq!(
        last(&rec).as_deref(),
        Some(format!("http://vhost.{DOMAIN}:{port}/").as_str())
    );
    let data = sdk::pattern(300_000, 7);
    c.put_object()
        .bucket("vhost")
        .key("dir/key one")
        .body(ByteStream::from(data.clone()))
        .send()
        .await
        .unwrap_or_else(|e| panic!("put: {}", show(&e)));
    assert_eq!(
        last(&rec).as_deref(),
        Some(format!("http://vhost.{DOMAIN}:{port}/dir/key%20one?x-id=PutObject").as_str())
    );
    let got = c
        .get_object()
        .bucket("vhost")
        .key("dir/key one")
        .send()
        .await
        .unwrap_or_else(|e| panic!("get: {}", show(&e)));
    assert_eq!(body_bytes(got.body).await, data);
    let list = c
        .list_objects_v2()
        .bucket("vhost")
        .send()
        .await
        .unwrap_or_else(|e| panic!("list: {}", show(&e)));
    let keys: Vec<&str> = list.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(keys, ["dir/key one"]);
    c.copy_object()
        .bucket("vhost")
        .key("copy")
        .copy_source("vhost/dir/key%20one")
        .send()
        .await
        .unwrap_or_else(|e| panic!("copy: {}", show(&e)));
    // Multipart, virtual-hosted: the node's Location is the URL the client used.
    let up = c
        .create_multipart_upload()
        .bucket("vhost")
        .key("mp key")
        .send()
        .await
        .unwrap_or_else(|e| panic!("create upload: {}", show(&e)));
    let id = up.upload_id().expect("upload id");
    let part = c
        .upload_part()
        .bucket("vhost")
        .key("mp key")
        .upload_id(id)
        .part_number(1)
        .body(ByteStream::from_static(b"one part"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("upload part: {}", show(&e)));
    let done = c
        .complete_multipart_upload()
        .bucket("vhost")
        .key("mp key")
        .upload_id(id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .parts(
                    CompletedPart::builder()
                        .part_number(1)
                        .set_e_tag(part.e_tag().map(str::to_owned))
                        .build(),
                )
                .build(),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("complete: {}", show(&e)));
    if !n.target.proxy {
        assert_eq!(
            done.location(),
            Some(format!("http://vhost.{DOMAIN}:{port}/mp%20key").as_str())
        );
    }
    assert_eq!(n.get("vhost", "mp key").await, b"one part");
    // Host = the domain itself: no bucket in it, path-style.
    let buckets = c
        .list_buckets()
        .send()
        .await
        .unwrap_or_else(|e| panic!("list buckets: {}", show(&e)));
    assert_eq!(
        last(&rec).as_deref(),
        Some(format!("http://{DOMAIN}:{port}/?x-id=ListBuckets").as_str())
    );
    assert!(buckets.buckets().iter().any(|b| b.name() == Some("vhost")));
    // Path-style (Host 127.0.0.1:PORT) sees the same objects.
    assert_eq!(n.get("vhost", "copy").await, data);
    c.delete_object()
        .bucket("vhost")
        .key("copy")
        .send()
        .await
        .unwrap_or_else(|e| panic!("delete: {}", show(&e)));
    let head = n
        .client
        .head_object()
        .bucket("vhost")
        .key("copy")
        .send()
        .await;
    assert_eq!(head.as_ref().err().and_then(sdk::status_of), Some(404));
}

/// boto3 with virtual-hosted addressing (origin-form requests to `BUCKET.DOMAIN:PORT`),
/// signing with SigV2 (whose resource then starts with `/BUCKET`) and with SigV4; presigned
/// URLs of both.
const VIRTUAL_SCRIPT: &str = r#"
port = ep.rsplit(":", 1)[1]
vep = "http://%s:%s" % (DOMAIN, port)
for sig in ["s3", "s3v4"]:
    b = "vh-" + sig
    c = client(sig, "virtual", endpoint=vep)
    c.create_bucket(Bucket=b)
    c.put_object(Bucket=b, Key="k 1", Body=b"virtual " + sig.encode())
    assert c.get_object(Bucket=b, Key="k 1")["Body"].read() == b"virtual " + sig.encode()
    assert [o["Key"] for o in c.list_objects(Bucket=b)["Contents"]] == ["k 1"]
    assert [o["Key"] for o in c.list_objects_v2(Bucket=b)["Contents"]] == ["k 1"]
    up = c.create_multipart_upload(Bucket=b, Key="mp")["UploadId"]
    e1 = c.upload_part(Bucket=b, Key="mp", UploadId=up, PartNumber=1, Body=b"one")["ETag"]
    c.complete_multipart_upload(Bucket=b, Key="mp", UploadId=up,
                                MultipartUpload={"Parts": [{"ETag": e1, "PartNumber": 1}]})
    assert c.get_object(Bucket=b, Key="mp")["Body"].read() == b"one"
    url = c.generate_presigned_url("get_object", Params={"Bucket": b, "Key": "k 1"})
    assert url.startswith("http://%s.%s:%s/" % (b, DOMAIN, port)), url
    assert urllib.request.urlopen(url).read() == b"virtual " + sig.encode()
    url_fails(url.replace("/k%201", "/k%202"), 403, "SignatureDoesNotMatch")
    # The same bucket path-style, from the same client's point of view.
    p = client(sig, "path")
    assert p.get_object(Bucket=b, Key="mp")["Body"].read() == b"one"
    c.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "k 1"}, {"Key": "mp"}]})
    c.delete_bucket(Bucket=b)
names = [x["Name"] for x in client("s3", "virtual", endpoint=vep).list_buckets()["Buckets"]]
assert not any(n.startswith("vh-") for n in names), names
print("ok")
"#;

async fn boto3_virtual_hosted_sigv2_and_sigv4(target: Target) {
    let n = TestNode::start_with(
        target,
        Options {
            domains: &[DOMAIN],
            ..Options::default()
        },
    );
    crate::support::sdk::run_python(with_prelude(VIRTUAL_SCRIPT), args(n.endpoint())).await;
}

/// aws-cli v1 (`aws s3 presign`) and s3cmd (header auth with `x-amz-date`, `signurl`), path-
/// style and, for s3cmd, virtual-hosted through its HTTP proxy setting (absolute-form requests
/// with `Host: BUCKET.DOMAIN:PORT`).
const TOOLS_SCRIPT: &str = r#"
import os, subprocess, tempfile
port = ep.rsplit(":", 1)[1]
tmp = tempfile.mkdtemp()
env = dict(os.environ, AWS_ACCESS_KEY_ID=ak, AWS_SECRET_ACCESS_KEY=sk, AWS_DEFAULT_REGION="us-east-1",
           AWS_CONFIG_FILE=os.devnull, AWS_SHARED_CREDENTIALS_FILE=os.devnull)
def run(*cmd):
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, (cmd, r.stdout, r.stderr)
    return r.stdout
url = run("aws", "--endpoint-url", ep, "s3", "presign", "s3://tools/a key", "--expires-in", "300").strip()
assert "AWSAccessKeyId=" in url and "Signature=" in url, url
assert urllib.request.urlopen(url).read() == b"from the sdk"
def s3cmd_config(name, extra):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write("[default]\naccess_key = %s\nsecret_key = %s\nuse_https = False\n"
                "signature_v2 = True\nbucket_location = us-east-1\n%s" % (ak, sk, extra))
    return path
configs = [s3cmd_config("path.cfg", "host_base = 127.0.0.1:%s\nhost_bucket = 127.0.0.1:%s\n" % (port, port)),
           s3cmd_config("virtual.cfg", "host_base = %s:%s\nhost_bucket = %%(bucket)s.%s:%s\n"
                        "proxy_host = 127.0.0.1\nproxy_port = %s\n" % (DOMAIN, port, DOMAIN, port, port))]
src = os.path.join(tmp, "src")
with open(src, "wb") as f:
    f.write(b"from s3cmd")
for i, cfg in enumerate(configs):
    key = "s3cmd/obj %d" % i
    run("s3cmd", "-c", cfg, "put", src, "s3://tools/" + key)
    out = os.path.join(tmp, "out%d" % i)
    run("s3cmd", "-c", cfg, "get", "s3://tools/" + key, out)
    assert open(out, "rb").read() == b"from s3cmd"
    assert "s3://tools/" + key in run("s3cmd", "-c", cfg, "ls", "s3://tools/s3cmd/")
    signed = run("s3cmd", "-c", cfg, "signurl", "s3://tools/" + key, "+300").strip()
    assert "Signature=" in signed, signed
    if i == 0:
        assert urllib.request.urlopen(signed).read() == b"from s3cmd"
    run("s3cmd", "-c", cfg, "del", "s3://tools/" + key)
# Another secret: a listing (a GET, whose error has a body) is refused.
bad = s3cmd_config("bad.cfg", "host_base = 127.0.0.1:%s\nhost_bucket = 127.0.0.1:%s\n" % (port, port))
with open(bad) as f:
    text = f.read().replace("secret_key = " + sk, "secret_key = " + sk + "x")
with open(bad, "w") as f:
    f.write(text)
r = subprocess.run(["s3cmd", "-c", bad, "ls", "s3://tools/"],
                   env=env, capture_output=True, text=True, timeout=120)
assert r.returncode != 0 and "SignatureDoesNotMatch" in r.stdout + r.stderr, (r.stdout, r.stderr)
print("ok")
"#;

async fn aws_cli_v1_and_s3cmd_sign_with_sigv2(target: Target) {
    let n = TestNode::start_with(
        target,
        Options {
            domains: &[DOMAIN],
            ..Options::default()
        },
    );
    n.bucket("tools").await;
    n.put("tools", "a key", "from the sdk").await;
    crate::support::sdk::run_python(with_prelude(TOOLS_SCRIPT), args(n.endpoint())).await;
    let left = n
        .client
        .list_objects_v2()
        .bucket("tools")
        .send()
        .await
        .unwrap_or_else(|e| panic!("list: {}", show(&e)));
    let keys: Vec<&str> = left.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(keys, ["a key"]);
}

/// A SigV2-signed raw request: `Date` now, `extra` headers, signed for `virtual_bucket`.
fn v2_request(
    method: &str,
    target: &str,
    host: &str,
    virtual_bucket: Option<&str>,
    secret: &str,
    extra: &[(&str, &str)],
) -> Vec<u8> {
    let date = DateTime::from_unix(now()).http().to_string();
    let mut hs: Vec<(String, String)> = vec![("Host".into(), host.into()), ("Date".into(), date)];
    hs.extend(
        extra
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned())),
    );
    let views: Vec<Header<'_>> = hs
        .iter()
        .map(|(n, v)| Header {
            name: n,
            value: v.as_bytes(),
        })
        .collect();
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let parts = RequestParts {
        method,
        path,
        query,
        headers: &views,
    };
    let auth = sigv2::authorization(&parts, virtual_bucket, ACCESS_KEY, secret).expect("signs");
    let mut out = format!("{method} {target} HTTP/1.1\r\n");
    for (n, v) in &hs {
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    out.push_str(&format!(
        "Authorization: {auth}\r\nContent-Length: 0\r\n\r\n"
    ));
    out.into_bytes()
}

fn send(addr: SocketAddr, bytes: &[u8], head: bool) -> Response {
    let mut c = Conn::connect(addr);
    c.send_raw(bytes);
    c.read_response(head)
}

/// Raw SigV2 edges: a virtual-hosted request signed without `/bucket`, path-style with a Host
/// equal to the domain, a malformed header, a presigned URL missing a parameter, both
/// mechanisms at once, an unknown key, a skewed clock.
async fn raw_sigv2_edges(target: Target) {
    let n = TestNode::start_with(
        target,
        Options {
            domains: &[DOMAIN],
            ..Options::default()
        },
    );
    n.bucket("edges").await;
    n.put("edges", "k", "edge data").await;
    let addr = n.addr;
    let vhost = format!("edges.{DOMAIN}:{}", addr.port());
    let domain = format!("{DOMAIN}:{}", addr.port());
    ::tokio::task::spawn_blocking(move || {
        // Virtual-hosted: the resource is /edges/k.
        let ok = v2_request("GET", "/k", &vhost, Some("edges"), SECRET_KEY, &[]);
        let r = send(addr, &ok, false);
        assert_eq!((r.status, r.body.as_slice()), (200, &b"edge data"[..]), "{}", r.text());
        let r = send(addr, &v2_request("GET", "/k", &vhost, None, SECRET_KEY, &[]), false);
        r.expect_error(403, "SignatureDoesNotMatch");
        // A Host equal to the domain is path-style.
        let path = v2_request("GET", "/edges/k", &domain, None, SECRET_KEY, &[]);
        let r = send(addr, &path, false);
        assert_eq!(r.status, 200, "{}", r.text());
        // Wrong secret; a header added after signing; HEAD (no body) answers the status.
        let r = send(addr, &v2_request("GET", "/edges/k", &domain, None, "nope", &[]), false);
        r.expect_error(403, "SignatureDoesNotMatch");
        let mut added = v2_request("HEAD", "/edges/k", &domain, None, SECRET_KEY, &[]);
        let at = added.len() - 2;
        added.splice(at..at, b"x-amz-meta-late: 1\r\n".iter().copied());
        assert_eq!(send(addr, &added, true).status, 403);
        // Malformed, partial, both at once, unknown key, skewed.
        let malformed = format!(
            "GET /edges/k HTTP/1.1\r\nHost: {domain}\r\nDate: {}\r\nAuthorization: AWS nocolon\r\n\r\n",
            DateTime::from_unix(now()).http()
        );
        send(addr, malformed.as_bytes(), false).expect_error(400, "InvalidArgument");
        let partial = format!("GET /edges/k?AWSAccessKeyId={ACCESS_KEY}&Signature=x HTTP/1.1\r\nHost: {domain}\r\n\r\n");
        send(addr, partial.as_bytes(), false).expect_error(403, "AccessDenied");
        let far = now() + 3600;
        let both = format!(
            "GET /edges/k?AWSAccessKeyId={ACCESS_KEY}&Expires={far}&Signature=x HTTP/1.1\r\n\
             Host: {domain}\r\nAuthorization: AWS {ACCESS_KEY}:x\r\n\r\n"
        );
        send(addr, both.as_bytes(), false).expect_error(400, "InvalidArgument");
        let unknown = format!(
            "GET /edges/k?AWSAccessKeyId=NOBODY&Expires={far}&Signature=x HTTP/1.1\r\nHost: {domain}\r\n\r\n"
        );
        send(addr, unknown.as_bytes(), false).expect_error(403, "InvalidAccessKeyId");
        let skewed = format!(
            "GET /edges/k HTTP/1.1\r\nHost: {domain}\r\nDate: {}\r\nAuthorization: AWS {ACCESS_KEY}:x\r\n\r\n",
            DateTime::from_unix(now() - 3600).http()
        );
        send(addr, skewed.as_bytes(), false).expect_error(403, "RequestTimeTooSkewed");
    })
    .await
    .expect("joined");
}

/// SigV2 and virtual-hosted requests through a proxy that re-signs (nodes with the proxy's
/// key, or keys of their own): the nodes know neither SigV2 nor the domain's requests, they
/// get SigV4 path-style.
fn proxy_sigv2_and_virtual(runtime: RuntimeKind, auth: Auth) {
    let setup = Setup::start_with(runtime, 2, auth, |cfg| cfg.domains = vec![DOMAIN.into()]);
    let endpoint = format!("http://{}", setup.addr);
    sdk::block_on(async move {
        crate::support::sdk::run_python(with_prelude(SIGV2_SCRIPT), args(endpoint.clone())).await;
        crate::support::sdk::run_python(with_prelude(VIRTUAL_SCRIPT), args(endpoint)).await;
    });
    drop(setup);
}

fn proxy_resign_sigv2_and_virtual(runtime: RuntimeKind) {
    proxy_sigv2_and_virtual(runtime, Auth::Resign);
}

fn proxy_own_keys_sigv2_and_virtual(runtime: RuntimeKind) {
    proxy_sigv2_and_virtual(runtime, Auth::OwnKeys);
}
