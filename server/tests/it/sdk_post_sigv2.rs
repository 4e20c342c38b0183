//! POST Object forms signed with SigV2 (`AWSAccessKeyId`, `policy`, `signature`: the base64
//! HMAC-SHA1 of the base64 policy) on a node, through the proxy (which checks the form and
//! sends it on as a SigV4 form, signed with the client's key or the node's own), both
//! runtimes: a form built by boto3's `generate_presigned_post` with `signature_version="s3"`,
//! forms signed by an independent HMAC-SHA1 in the script for the fields and the edge cases
//! (expired, tampered, wrong key and secret, another user's bucket, extra fields, sizes,
//! redirects, ACL, tagging, encryption), the objects read back with the AWS SDK for Rust; and
//! every SigV2 form refused on a server with `--no-sigv2`, where SigV4 forms still work.

use ferry_server::RuntimeKind;

use crate::support::proxy::{Auth, Setup};
use crate::support::sdk::{Options, Target, TestNode, block_on, show};
use crate::support::{ALICE, TestUser};

on_every_target!(sigv2_forms, sigv2_forms_turned_off);
on_both_runtimes!(sigv2_forms_resigned);

const USERS: &[TestUser] = &[ALICE];

const SCRIPT: &str = r#"
import sys, base64, hmac, hashlib, json, datetime
import boto3, requests
from botocore.config import Config
ep, ak, sk, other_ak, other_sk, mode = sys.argv[1:7]
region = "us-east-1"

def client(ak, sk, version):
    return boto3.client("s3", endpoint_url=ep, aws_access_key_id=ak, aws_secret_access_key=sk,
                        region_name=region,
                        config=Config(s3={"addressing_style": "path"}, signature_version=version,
                                      retries={"max_attempts": 1}))
c = client(ak, sk, "s3v4")
v2 = client(ak, sk, "s3")
c.create_bucket(Bucket="forms")

def error(r, status, code, message=None):
    assert r.status_code == status, (r.status_code, r.text)
    assert "<Code>%s</Code>" % code in r.text, r.text
    if message is not None:
        assert "<Message>%s</Message>" % message in r.text, r.text

def absent(key, bucket="forms"):
    try:
        c.head_object(Bucket=bucket, Key=key)
    except c.exceptions.ClientError as e:
        assert e.response["Error"]["Code"] == "404", e.response
    else:
        raise SystemExit("stored " + key)

# boto3 builds the SigV2 form; requests sends it (fields first, the file last).
p = v2.generate_presigned_post(
    "forms", "up/${filename}",
    Fields={"Content-Type": "text/plain", "x-amz-meta-who": "boto"},
    Conditions=[{"Content-Type": "text/plain"}, {"x-amz-meta-who": "boto"},
                ["content-length-range", 1, 100]],
    ExpiresIn=600)
assert "AWSAccessKeyId" in p["fields"] and "signature" in p["fields"], p
r = requests.post(p["url"], data=p["fields"], files={"file": ("hello.txt", b"hello v2")})
if mode == "off":
    # Turned off: refused as a SigV2 request is, nothing stored; a SigV4 form still works.
    error(r, 403, "AccessDenied")
    absent("up/hello.txt")
    p4 = c.generate_presigned_post("forms", "v4", ExpiresIn=600)
    r = requests.post(p4["url"], data=p4["fields"], files={"file": ("f", b"v4")})
    assert r.status_code == 204, (r.status_code, r.text)
    print("ok")
    sys.exit(0)
assert r.status_code == 204, (r.status_code, r.text)
assert r.headers["ETag"] == '"%s"' % hashlib.md5(b"hello v2").hexdigest(), r.headers
assert "x-amz-version-id" not in r.headers, r.headers
o = c.get_object(Bucket="forms", Key="up/hello.txt")
assert o["Body"].read() == b"hello v2"
assert o["ContentType"] == "text/plain" and o["Metadata"] == {"who": "boto"}, o

# Forms signed here, independently of botocore: Base64(HMAC-SHA1(secret, policy)).
def form(fields, conditions, expires=600, bucket="forms", key=ak, secret=sk):
    now = datetime.datetime.now(datetime.timezone.utc)
    named = set()
    for x in conditions:
        if isinstance(x, dict):
            named.update(k.lower() for k in x)
        elif x[0] != "content-length-range":
            named.add(x[1].lstrip("$").lower())
    conds = [{"bucket": bucket}] + conditions
    conds += [{k: v} for k, v in fields.items() if k.lower() not in named]
    exp = (now + datetime.timedelta(seconds=expires)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    f = dict(fields)
    f["AWSAccessKeyId"] = key
    f["policy"] = base64.b64encode(json.dumps({"expiration": exp, "conditions": conds}).encode()).decode()
    f["signature"] = base64.b64encode(
        hmac.new(secret.encode(), f["policy"].encode(), hashlib.sha1).digest()).decode()
    return f

def post(fields, content=b"data", filename="f.bin", bucket="forms"):
    return requests.post(ep + "/" + bucket, data=fields, files={"file": (filename, content)},
                         allow_redirects=False)

assert post(form({"key": "plain"}, [])).status_code == 204
assert c.get_object(Bucket="forms", Key="plain")["Body"].read() == b"data"
# Expired policy.
error(post(form({"key": "late"}, [], expires=-60)), 403, "AccessDenied",
      "Invalid according to Policy: Policy expired.")
# Wrong secret; unknown key; a signature of another policy.
error(post(form({"key": "forged"}, [], secret="not-the-secret")), 403, "SignatureDoesNotMatch")
error(post(form({"key": "forged"}, [], key="AKIANOSUCHKEY")), 403, "InvalidAccessKeyId")
f = form({"key": "forged"}, [])
f["signature"] = form({"key": "other"}, [])["signature"]
error(post(f), 403, "SignatureDoesNotMatch")
# A policy changed after it was signed (a wider content-length-range).
f = form({"key": "tampered"}, [["content-length-range", 1, 5]])
doc = json.loads(base64.b64decode(f["policy"]))
doc["conditions"] = [x for x in doc["conditions"] if not isinstance(x, list)]
doc["conditions"].append(["content-length-range", 1, 1000])
f["policy"] = base64.b64encode(json.dumps(doc).encode()).decode()
error(post(f, b"0123456789"), 403, "SignatureDoesNotMatch")
# Fields missing: the signature, the policy.
f = form({"key": "half"}, []); del f["signature"]
error(post(f), 400, "InvalidArgument")
f = form({"key": "half"}, []); del f["policy"]
error(post(f), 400, "InvalidArgument")
absent("late"); absent("forged"); absent("tampered"); absent("half")
# Another user's form for this bucket: its signature is good, the bucket is not its own.
# (Behind a proxy that signs with the nodes' own keys there are no users but the clients'
# keys: another key is another signer all the same.)
error(post(form({"key": "theirs"}, [], key=other_ak, secret=other_sk)), 403,
      "AccessDenied" if mode == "on" else "InvalidAccessKeyId")
absent("theirs")
# Another user's secret under this user's key id: a signature that is not this user's.
error(post(form({"key": "theirs"}, [], key=ak, secret=other_sk)), 403, "SignatureDoesNotMatch")
# Another user's form carrying SigV4's fields, naming this user (the policy covers them): the
# form is still the other user's (SigV2), refused on this bucket, the fields a proxy turns the
# form into SigV4 with are its own.
now = datetime.datetime.now(datetime.timezone.utc)
smuggled = {"key": "smuggled", "x-amz-algorithm": "AWS4-HMAC-SHA256",
            "x-amz-credential": "%s/%s/%s/s3/aws4_request" % (ak, now.strftime("%Y%m%d"), region),
            "x-amz-date": now.strftime("%Y%m%dT%H%M%SZ")}
error(post(form(smuggled, [], key=other_ak, secret=other_sk)), 403,
      "AccessDenied" if mode == "on" else "InvalidAccessKeyId")
absent("theirs"); absent("smuggled")
# A field no condition covers; a condition that fails; a form for another bucket.
f = form({"key": "extra"}, [])
f["x-amz-meta-sneaky"] = "1"
error(post(f), 403, "AccessDenied",
      "Invalid according to Policy: Extra input fields: x-amz-meta-sneaky")
error(post(form({"key": "other"}, [["eq", "$key", "wanted"]])), 403, "AccessDenied")
c.create_bucket(Bucket="forms-b")
error(post(form({"key": "moved"}, []), bucket="forms-b"), 403, "AccessDenied")
absent("extra"); absent("other"); absent("moved", "forms-b")
# x-ignore-* fields need no condition.
f = form({"key": "ignored"}, [])
f["x-ignore-me"] = "whatever"
assert post(f).status_code == 204
# content-length-range, checked while streaming.
error(post(form({"key": "big"}, [["content-length-range", 1, 5]]), b"0123456789"), 400, "EntityTooLarge")
error(post(form({"key": "small"}, [["content-length-range", 1, 5]]), b""), 400, "EntityTooSmall")
absent("big"); absent("small")
big = bytes(range(256)) * 4096 * 3
r = post(form({"key": "large"}, [["content-length-range", 0, len(big)]]), big)
assert r.status_code == 204, r.text
assert c.get_object(Bucket="forms", Key="large")["Body"].read() == big
# ${filename}; 201 with a PostResponse; a redirect.
r = post(form({"key": "files/${filename}", "success_action_status": "201"},
              [["starts-with", "$key", "files/"]]), b"named", filename="name.txt")
assert r.status_code == 201 and "<Key>files/name.txt</Key>" in r.text, (r.status_code, r.text)
r = post(form({"key": "redir", "success_action_redirect": "http://example.com/done"}, []), b"r")
assert r.status_code == 303, (r.status_code, r.text)
assert r.headers["Location"].startswith("http://example.com/done?bucket=forms&key=redir&etag="), r.headers
# ACL, tagging, encryption fields.
assert post(form({"key": "acl", "acl": "public-read"}, [])).status_code == 204
grants = c.get_object_acl(Bucket="forms", Key="acl")["Grants"]
assert {g["Permission"] for g in grants} == {"FULL_CONTROL", "READ"}, grants
tags = "<Tagging><TagSet><Tag><Key>k</Key><Value>v</Value></Tag></TagSet></Tagging>"
assert post(form({"key": "tagged", "tagging": tags}, [])).status_code == 204
assert c.get_object_tagging(Bucket="forms", Key="tagged")["TagSet"] == [{"Key": "k", "Value": "v"}]
r = post(form({"key": "enc", "x-amz-server-side-encryption": "AES256"}, []), b"secret")
assert r.status_code == 204 and r.headers["x-amz-server-side-encryption"] == "AES256", r.headers
o = c.get_object(Bucket="forms", Key="enc")
assert o["ServerSideEncryption"] == "AES256" and o["Body"].read() == b"secret", o
error(post(form({"key": "kms", "x-amz-server-side-encryption": "aws:kms:dsse"}, [])), 501,
      "NotImplemented")
absent("kms")
# The policy may name the signature's fields too (conditions on them are kept where checked).
f = form({"key": "named"}, [{"AWSAccessKeyId": ak}])
assert post(f).status_code == 204, post(f).text
# Beside SigV4's x-amz-signature, the SigV2 fields are fields the policy must cover.
f = form({"key": "both"}, [])
f["x-amz-signature"] = "0" * 64
r = post(f)
assert r.status_code in (400, 403), (r.status_code, r.text)
absent("both")
print("ok")
"#;

async fn run(endpoint: String, mode: &str) {
    let args = [
        endpoint.as_str(),
        crate::support::ACCESS_KEY,
        crate::support::SECRET_KEY,
        ALICE.access_key,
        ALICE.secret_key,
        mode,
    ];
    crate::support::sdk::run_python(SCRIPT, args.map(str::to_owned).to_vec()).await;
}

async fn sigv2_forms(target: Target) {
    let n = TestNode::start_with(
        target,
        Options {
            users: USERS,
            ..Options::default()
        },
    );
    run(n.endpoint(), "on").await;
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
    assert_eq!(crate::support::sdk::body_bytes(o.body).await, b"hello v2");
    assert_eq!(n.get("forms", "files/name.txt").await, b"named");
    let t = n
        .client
        .get_object_tagging()
        .bucket("forms")
        .key("tagged")
        .send()
        .await
        .unwrap_or_else(|e| panic!("tagging: {}", show(&e)));
    assert_eq!(t.tag_set().len(), 1);
    for key in ["theirs", "smuggled", "forged", "tampered", "both"] {
        let e = n.client.head_object().bucket("forms").key(key).send().await;
        assert!(e.is_err(), "{key} stored");
    }
}

async fn sigv2_forms_turned_off(target: Target) {
    let n = TestNode::start_with(
        target,
        Options {
            users: USERS,
            sigv2: false,
            ..Options::default()
        },
    );
    run(n.endpoint(), "off").await;
    assert_eq!(n.get("forms", "v4").await, b"v4");
}

/// The same forms through a proxy in front of nodes with keys of their own (and no users): the
/// proxy checks each SigV2 form and sends it on as a SigV4 form signed with the node's key, so
/// the node checks the policy it gets; a tampered policy is refused by the proxy, which would
/// otherwise have signed it.
fn sigv2_forms_resigned(runtime: RuntimeKind) {
    let s = Setup::start(runtime, 2, Auth::OwnKeys);
    block_on(run(format!("http://{}", s.addr), "resign"));
}
