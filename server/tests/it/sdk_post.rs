//! POST Object (browser uploads) on a node and through the proxy (which finds the key in the
//! form, checks the form, and forwards it to its node, signed again for nodes with keys of
//! their own), both runtimes: forms built by boto3's
//! `generate_presigned_post` and sent with `requests`, raw forms for the edge cases (expired
//! policy, wrong signature, extra and failed conditions, `content-length-range`,
//! `${filename}`, `success_action_status`, redirects, ACLs, tagging, encryption, anonymous
//! forms), and the
//! objects read back with the AWS SDK for Rust.

use std::io::{Read as _, Write as _};

use ferry_server::RuntimeKind;

use crate::support::proxy::{Auth, Setup};
use crate::support::sdk::{Target, TestNode, block_on, body_bytes, show};

on_every_target!(browser_uploads, anonymous_form);
on_both_runtimes!(browser_uploads_resigned);

const SCRIPT: &str = r#"
import sys, base64, hmac, hashlib, json, datetime
import boto3, requests
from botocore.config import Config
ep, ak, sk = sys.argv[1:4]
region = "us-east-1"
c = boto3.client("s3", endpoint_url=ep, aws_access_key_id=ak, aws_secret_access_key=sk,
                 region_name=region,
                 config=Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                               retries={"max_attempts": 1}))
c.create_bucket(Bucket="forms")

# boto3 builds the form; requests sends it (fields first, the file last).
p = c.generate_presigned_post(
    "forms", "up/${filename}",
    Fields={"Content-Type": "text/plain", "x-amz-meta-who": "boto"},
    Conditions=[{"Content-Type": "text/plain"}, {"x-amz-meta-who": "boto"},
                ["content-length-range", 1, 100]],
    ExpiresIn=600)
r = requests.post(p["url"], data=p["fields"], files={"file": ("hello.txt", b"hello post")})
assert r.status_code == 204, (r.status_code, r.text)
assert r.headers["ETag"] == '"%s"' % hashlib.md5(b"hello post").hexdigest(), r.headers
o = c.get_object(Bucket="forms", Key="up/hello.txt")
assert o["Body"].read() == b"hello post"
assert o["ContentType"] == "text/plain", o
assert o["Metadata"] == {"who": "boto"}, o

def signing_key(date):
    k = ("AWS4" + sk).encode()
    for part in (date, region, "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    return k

def named(conditions):
    out = set()
    for x in conditions:
        if isinstance(x, dict):
            out.update(k.lower() for k in x)
        elif x[0] != "content-length-range":
            out.add(x[1].lstrip("$").lower())
    return out

def form(fields, conditions, expires=600):
    now = datetime.datetime.now(datetime.timezone.utc)
    date, amz = now.strftime("%Y%m%d"), now.strftime("%Y%m%dT%H%M%SZ")
    cred = "%s/%s/%s/s3/aws4_request" % (ak, date, region)
    f = {"x-amz-algorithm": "AWS4-HMAC-SHA256", "x-amz-credential": cred, "x-amz-date": amz}
    f.update(fields)
    conds = [{"bucket": "forms"}] + conditions
    # Every field is covered, by the conditions given or an exact match.
    conds += [{k: v} for k, v in f.items() if k.lower() not in named(conditions)]
    exp = (now + datetime.timedelta(seconds=expires)).strftime("%Y-%m-%dT%H:%M:%SZ")
    doc = json.dumps({"expiration": exp, "conditions": conds})
    f["policy"] = base64.b64encode(doc.encode()).decode()
    f["x-amz-signature"] = hmac.new(signing_key(date), f["policy"].encode(), hashlib.sha256).hexdigest()
    return f

def post(fields, content=b"data", filename="f.bin", **kw):
    return requests.post(ep + "/forms", data=fields, files={"file": (filename, content)},
                         allow_redirects=False, **kw)

def error(r, status, code, message=None):
    assert r.status_code == status, (r.status_code, r.text)
    assert "<Code>%s</Code>" % code in r.text, r.text
    if message is not None:
        assert "<Message>%s</Message>" % message in r.text, r.text

def absent(key):
    try:
        c.head_object(Bucket="forms", Key=key)
    except c.exceptions.ClientError as e:
        assert e.response["Error"]["Code"] == "404", e.response
    else:
        raise SystemExit("stored " + key)

# Expired policy.
error(post(form({"key": "late"}, [], expires=-60)), 403, "AccessDenied",
      "Invalid according to Policy: Policy expired.")
absent("late")
# Wrong signature; unknown key.
f = form({"key": "forged"}, [])
f["x-amz-signature"] = "0" * 64
error(post(f), 403, "SignatureDoesNotMatch")
f = form({"key": "forged"}, [])
f["x-amz-credential"] = f["x-amz-credential"].replace(ak, "AKIANOSUCHKEY")
error(post(f), 403, "InvalidAccessKeyId")
absent("forged")
# A policy changed after it was signed (a wider content-length-range): refused. (Through a proxy
# that signs forms again for its backends, by the proxy.)
f = form({"key": "tampered"}, [["content-length-range", 1, 5]])
doc = json.loads(base64.b64decode(f["policy"]))
doc["conditions"] = [x for x in doc["conditions"] if not isinstance(x, list)]
doc["conditions"].append(["content-length-range", 1, 1000])
f["policy"] = base64.b64encode(json.dumps(doc).encode()).decode()
error(post(f, b"0123456789"), 403, "SignatureDoesNotMatch")
absent("tampered")
# A field no condition covers; a condition that fails.
f = form({"key": "extra"}, [])
f["x-amz-meta-sneaky"] = "1"
error(post(f), 403, "AccessDenied",
      "Invalid according to Policy: Extra input fields: x-amz-meta-sneaky")
f = form({"key": "other"}, [["eq", "$key", "wanted"]])
r = post(f)
error(r, 403, "AccessDenied")
assert "Invalid according to Policy: Policy Condition failed: [&quot;eq&quot;,&quot;$key&quot;,&quot;wanted&quot;]" in r.text, r.text
absent("extra"); absent("other")
# Encryption fields, as PutObject's headers: SSE-S3 stored encrypted, SSE-KMS refused.
r = post(form({"key": "enc", "x-amz-server-side-encryption": "AES256"}, []), content=b"secret")
assert r.status_code == 204, (r.status_code, r.text)
assert r.headers["x-amz-server-side-encryption"] == "AES256", r.headers
o = c.get_object(Bucket="forms", Key="enc")
assert o["ServerSideEncryption"] == "AES256" and o["Body"].read() == b"secret", o
# A field asking for what Ferry does not do is refused, not ignored.
error(post(form({"key": "kms", "x-amz-server-side-encryption": "aws:kms:dsse"}, [])), 501,
      "NotImplemented")
absent("kms")
# x-ignore-* fields need no condition.
f = form({"key": "ignored"}, [])
f["x-ignore-me"] = "whatever"
assert post(f).status_code == 204
# content-length-range, checked while streaming: nothing stored either way.
error(post(form({"key": "big"}, [["content-length-range", 1, 5]]), b"0123456789"), 400, "EntityTooLarge")
error(post(form({"key": "small"}, [["content-length-range", 1, 5]]), b""), 400, "EntityTooSmall")
absent("big"); absent("small")
big = bytes(range(256)) * 4096 * 3  # 3 MiB: several buffers
r = post(form({"key": "large"}, [["content-length-range", 0, len(big)]]), big)
assert r.status_code == 204, r.text
assert c.get_object(Bucket="forms", Key="large")["Body"].read() == big
# ${filename}; 201 with a PostResponse document.
f = form({"key": "files/${filename}", "success_action_status": "201"},
         [["starts-with", "$key", "files/"]])
r = post(f, b"named", filename="name.txt")
assert r.status_code == 201, (r.status_code, r.text)
assert "<Key>files/name.txt</Key>" in r.text and "<Bucket>forms</Bucket>" in r.text, r.text
assert "<ETag>&quot;%s&quot;</ETag>" % hashlib.md5(b"named").hexdigest() in r.text, r.text
assert r.headers["Content-Type"] == "application/xml", r.headers
assert c.get_object(Bucket="forms", Key="files/name.txt")["Body"].read() == b"named"
# 200: empty body.
r = post(form({"key": "ok200", "success_action_status": "200"}, []))
assert r.status_code == 200 and r.text == "", (r.status_code, r.text)
# Redirect.
r = post(form({"key": "redir", "success_action_redirect": "http://example.com/done"}, []), b"r")
assert r.status_code == 303, (r.status_code, r.text)
etag = hashlib.md5(b"r").hexdigest()
assert r.headers["Location"] == "http://example.com/done?bucket=forms&key=redir&etag=%%22%s%%22" % etag, r.headers
# ACLs: the acl field is the object's canned ACL; an unknown one is refused.
error(post(form({"key": "acl", "acl": "world-writable"}, [])), 400, "InvalidArgument")
absent("acl")
assert post(form({"key": "acl", "acl": "public-read"}, [])).status_code == 204
grants = c.get_object_acl(Bucket="forms", Key="acl")["Grants"]
assert {g["Permission"] for g in grants} == {"FULL_CONTROL", "READ"}, grants
assert post(form({"key": "acl", "acl": "private"}, [])).status_code == 204
# The x-amz-grant-* fields, as PutObject's headers: a grant to all users; both a canned ACL
# and grants refused, as on PutObject.
all_users = 'uri="http://acs.amazonaws.com/groups/global/AllUsers"'
assert post(form({"key": "granted", "x-amz-grant-read": all_users}, [])).status_code == 204
grants = c.get_object_acl(Bucket="forms", Key="granted")["Grants"]
# (Grants replace the ACL, as grant headers do: the owner keeps only its ownership.)
assert [(g["Grantee"].get("URI"), g["Permission"]) for g in grants] == [
    ("http://acs.amazonaws.com/groups/global/AllUsers", "READ")], grants
error(post(form({"key": "both", "acl": "private", "x-amz-grant-read": all_users}, [])), 400,
      "InvalidRequest")
absent("both")
# Tagging.
tags = "<Tagging><TagSet><Tag><Key>k</Key><Value>v</Value></Tag></TagSet></Tagging>"
assert post(form({"key": "tagged", "tagging": tags}, [])).status_code == 204
t = c.get_object_tagging(Bucket="forms", Key="tagged")["TagSet"]
assert t == [{"Key": "k", "Value": "v"}], t
# Anonymous form: the bucket is private.
error(post({"key": "anon"}), 403, "AccessDenied")
absent("anon")
# A signed form's s3:authType is POST.
c.put_bucket_policy(Bucket="forms", Policy=json.dumps({"Version": "2012-10-17", "Statement": [{
    "Effect": "Deny", "Principal": "*", "Action": "s3:PutObject",
    "Resource": "arn:aws:s3:::forms/formonly/*",
    "Condition": {"StringNotEquals": {"s3:authType": "POST"}}}]}))
try:
    c.put_object(Bucket="forms", Key="formonly/x", Body=b"x")
except c.exceptions.ClientError as e:
    assert e.response["Error"]["Code"] == "AccessDenied", e.response
else:
    raise SystemExit("PutObject passed a POST-only policy")
r = post(form({"key": "formonly/x"}, []))
assert r.status_code == 204, (r.status_code, r.text)
c.delete_bucket_policy(Bucket="forms")
# No file field.
r = requests.post(ep + "/forms", files={"key": (None, "nofile")})
error(r, 400, "IncorrectNumberOfFilesInPostRequest")
print("ok")
"#;

async fn run_script(endpoint: String) {
    let key = [crate::support::ACCESS_KEY, crate::support::SECRET_KEY].map(str::to_owned);
    crate::support::sdk::run_python(SCRIPT, [vec![endpoint], key.to_vec()].concat()).await;
}

async fn browser_uploads(target: Target) {
    let n = TestNode::start(target);
    run_script(n.endpoint()).await;
    // Read back with the AWS SDK for Rust.
    let o = n
        .client
        .get_object()
        .bucket("forms")
        .key("up/hello.txt")
        .send()
        .await
        .unwrap_or_else(|e| panic!("get: {}", show(&e)));
    assert_eq!(o.content_type(), Some("text/plain"));
    assert_eq!(
        o.metadata().and_then(|m| m.get("who")).map(String::as_str),
        Some("boto")
    );
    assert_eq!(body_bytes(o.body).await, b"hello post");
    let t = n
        .client
        .get_object_tagging()
        .bucket("forms")
        .key("tagged")
        .send()
        .await
        .unwrap_or_else(|e| panic!("tagging: {}", show(&e)));
    assert_eq!(t.tag_set().len(), 1);
    assert_eq!(n.get("forms", "files/name.txt").await, b"named");
}

/// The same forms through a proxy in front of nodes with keys of their own: the proxy checks
/// each form against the clients' keys and signs it again with the node's key, so the node
/// checks the form it gets (a form the proxy passed unchanged would fail there); a tampered
/// policy is refused by the proxy, which would otherwise have signed it.
fn browser_uploads_resigned(runtime: RuntimeKind) {
    let s = Setup::start(runtime, 2, Auth::OwnKeys);
    block_on(run_script(format!("http://{}", s.addr)));
}

/// A raw form without a signature into a private bucket: refused, nothing stored; the same
/// form after a bucket policy lets anyone PutObject under `pub/`: stored, and only there.
async fn anonymous_form(target: Target) {
    let n = TestNode::start(target);
    n.bucket("pbucket").await;
    let send = |key: &str| {
        let body = format!(
            "--xx\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\n{key}\r\n--xx\r\n\
             Content-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\nabc\r\n--xx\r\n\
             Content-Disposition: form-data; name=\"after\"\r\n\r\nignored\r\n--xx--\r\n"
        );
        let req = format!(
            "POST /pbucket HTTP/1.1\r\nHost: {}\r\nContent-Type: multipart/form-data; boundary=xx\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            n.addr,
            body.len()
        );
        let mut s = std::net::TcpStream::connect(n.addr).expect("connect");
        s.write_all(req.as_bytes()).expect("write");
        let mut out = String::new();
        s.read_to_string(&mut out).expect("read");
        out
    };
    let out = send("k");
    assert!(out.starts_with("HTTP/1.1 403"), "{out}");
    assert!(out.contains("<Code>AccessDenied</Code>"), "{out}");
    assert!(
        n.client
            .head_object()
            .bucket("pbucket")
            .key("k")
            .send()
            .await
            .is_err()
    );
    let policy = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*",
        "Action":"s3:PutObject","Resource":"arn:aws:s3:::pbucket/pub/*"}]}"#;
    n.client
        .put_bucket_policy()
        .bucket("pbucket")
        .policy(policy)
        .send()
        .await
        .unwrap_or_else(|e| panic!("policy: {}", show(&e)));
    let out = send("pub/k");
    assert!(out.starts_with("HTTP/1.1 204"), "{out}");
    assert_eq!(n.get("pbucket", "pub/k").await, b"abc");
    let out = send("k");
    assert!(out.starts_with("HTTP/1.1 403"), "{out}");
}
