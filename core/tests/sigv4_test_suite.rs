//! SigV4 against AWS's own signing test suite (`aws-signing-test-suite/v4`, as published by AWS
//! with its `aws-sigv4` crate, from the CRT suite `awslabs/aws-c-auth`): for each case S3's rules
//! apply to (no path normalisation, single encoding), core's canonical request, string to sign
//! and signature of the suite's signed request, header-signed and presigned, must be the
//! suite's. The expected texts below are the suite's files, copied unchanged.
//!
//! Left out: the `*-normalized` cases of relative paths and dot segments (S3 does not normalise
//! paths), `get-header-value-multiline` (obsolete line folding, which no HTTP/1.1 parser takes),
//! `double-*` (services that encode twice) and `post-sts-header-after` (a token added after
//! signing).

use ferry_core::http::Header;
use ferry_core::s3::sigv4::{
    CredentialScope, Hex64, RequestParts, canonical_request, derive_signing_key, sha256, sign,
    string_to_sign,
};
use ferry_core::time::DateTime;

const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
const TIME: &str = "20150830T123600Z";

/// One case: its files.
struct Case {
    name: &'static str,
    /// `header-signed-request.txt`.
    signed_request: &'static str,
    /// `header-canonical-request.txt`.
    canonical_request: &'static str,
    /// `header-string-to-sign.txt`.
    string_to_sign: &'static str,
    /// `header-signature.txt`.
    signature: &'static str,
    /// `query-signed-request.txt`.
    presigned_request: &'static str,
    /// `query-canonical-request.txt`.
    presigned_canonical_request: &'static str,
    /// `query-string-to-sign.txt`.
    presigned_string_to_sign: &'static str,
    /// `query-signature.txt`.
    presigned_signature: &'static str,
}

/// A request of the suite: method, raw target, headers (values without the whitespace around
/// them, as an HTTP parser gives them), body.
struct Parsed<'a> {
    method: &'a str,
    target: &'a str,
    headers: Vec<(&'a str, &'a str)>,
    body: &'a str,
}

fn parse(text: &str) -> Parsed<'_> {
    let (head, body) = text.split_once("\n\n").unwrap_or((text, ""));
    let mut lines = head.lines();
    let line = lines.next().expect("request line");
    let (method, rest) = line.split_once(' ').expect("method");
    let target = rest.strip_suffix(" HTTP/1.1").expect("HTTP/1.1");
    let headers = lines
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (n, v) = l.split_once(':').expect("header");
            (n, v.trim_matches([' ', '\t']))
        })
        .collect();
    Parsed {
        method,
        target,
        headers,
        body: body.trim_end_matches('\n'),
    }
}

/// The value of `name=` in an `Authorization` header (up to `,` or its end).
fn auth_field<'a>(auth: &'a str, name: &str) -> &'a str {
    let start = auth.find(name).expect("field") + name.len();
    auth[start..].split(',').next().unwrap_or_default().trim()
}

/// Core's canonical request, string to sign and signature of `req` with these signed headers.
fn derive(req: &Parsed<'_>, signed_headers: &str, presigned: bool) -> (String, String, String) {
    let views: Vec<Header<'_>> = req
        .headers
        .iter()
        .map(|(n, v)| Header {
            name: n,
            value: v.as_bytes(),
        })
        .collect();
    let (path, query) = req.target.split_once('?').unwrap_or((req.target, ""));
    let parts = RequestParts {
        method: req.method,
        path,
        query,
        headers: &views,
    };
    let payload = Hex64::of(&sha256(req.body.as_bytes()));
    let creq = canonical_request(&parts, signed_headers, payload.as_str(), presigned)
        .unwrap_or_else(|e| panic!("canonical request: {e:?}"));
    let time = DateTime::parse_amz(TIME).expect("time");
    let mut scope = CredentialScope::new(time, "us-east-1");
    scope.service = "service".into();
    let sts = string_to_sign(time, &scope, &creq);
    let key = derive_signing_key(SECRET, &scope.date, &scope.region, &scope.service);
    let sig = sign(&key, sts.as_bytes()).to_hex().as_str().to_owned();
    (String::from_utf8(creq).expect("utf-8"), sts, sig)
}

#[test]
fn the_suites_header_signed_requests() {
    for c in CASES {
        let req = parse(c.signed_request);
        let auth = req
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("authorization"))
            .map(|(_, v)| *v)
            .expect("Authorization");
        let signed = auth_field(auth, "SignedHeaders=");
        let (creq, sts, sig) = derive(&req, signed, false);
        assert_eq!(creq, c.canonical_request, "{}: canonical request", c.name);
        assert_eq!(sts, c.string_to_sign, "{}: string to sign", c.name);
        assert_eq!(sig, c.signature, "{}: signature", c.name);
        assert_eq!(auth_field(auth, "Signature="), c.signature, "{}", c.name);
    }
}

#[test]
fn the_suites_presigned_requests() {
    for c in CASES {
        let req = parse(c.presigned_request);
        let query = req.target.split_once('?').expect("a query").1;
        let signed = query
            .split('&')
            .find_map(|p| p.strip_prefix("X-Amz-SignedHeaders="))
            .expect("X-Amz-SignedHeaders")
            .replace("%3B", ";");
        let (creq, sts, sig) = derive(&req, &signed, true);
        let name = c.name;
        assert_eq!(
            creq, c.presigned_canonical_request,
            "{name}: canonical request"
        );
        assert_eq!(sts, c.presigned_string_to_sign, "{name}: string to sign");
        assert_eq!(sig, c.presigned_signature, "{name}: signature");
    }
}

#[test]
fn every_case_is_checked() {
    assert_eq!(CASES.len(), 30);
}

const CASES: &[Case] = &[
    Case {
        name: "get-vanilla",
        signed_request: r#"GET / HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31

"#,
        canonical_request: r#"GET
/

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63"#,
        signature: "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
        presigned_request: r#"GET /?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844b25b7192d3865d HTTP/1.1
Host:example.amazonaws.com

"#,
        presigned_canonical_request: r#"GET
/
X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host
host:example.amazonaws.com

host
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        presigned_string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
bb7705b4aa3cb8e8f5e1e0b3d4c0b64030797a313c8ceee43e33117cc43eadc5"#,
        presigned_signature: "e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844b25b7192d3865d",
    },
    Case {
        name: "get-header-key-duplicate",
        signed_request: r#"GET / HTTP/1.1
Host:example.amazonaws.com
My-Header1:value2
My-Header1:value2
My-Header1:value1
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;my-header1;x-amz-date, Signature=c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea

"#,
        canonical_request: r#"GET
/

host:example.amazonaws.com
my-header1:value2,value2,value1
x-amz-date:20150830T123600Z

host;my-header1;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
dc7f04a3abfde8d472b0ab1a418b741b7c67174dad1551b4117b15527fbe966c"#,
        signature: "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea",
        presigned_request: r#"GET /?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host%3Bmy-header1&X-Amz-Expires=3600&X-Amz-Signature=3349ee0b81b4b589da0ff28a395c3591e04de515651dd74f298fa992d1507a97 HTTP/1.1
Host:example.amazonaws.com
My-Header1:value2
My-Header1:value2
My-Header1:value1

"#,
        presigned_canonical_request: r#"GET
/
X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host%3Bmy-header1
host:example.amazonaws.com
my-header1:value2,value2,value1

host;my-header1
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        presigned_string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
fe8b58fb44117d598520befc07c144a5699c661a8db78f9ce4caee1655dec813"#,
        presigned_signature: "3349ee0b81b4b589da0ff28a395c3591e04de515651dd74f298fa992d1507a97",
    },
    Case {
        name: "get-header-value-order",
        signed_request: r#"GET / HTTP/1.1
Host:example.amazonaws.com
My-Header1:value4
My-Header1:value1
My-Header1:value3
My-Header1:value2
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;my-header1;x-amz-date, Signature=08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01

"#,
        canonical_request: r#"GET
/

host:example.amazonaws.com
my-header1:value4,value1,value3,value2
x-amz-date:20150830T123600Z

host;my-header1;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
31ce73cd3f3d9f66977ad3dd957dc47af14df92fcd8509f59b349e9137c58b86"#,
        signature: "08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01",
        presigned_request: r#"GET /?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host%3Bmy-header1&X-Amz-Expires=3600&X-Amz-Signature=313720e71ca6202fdcfa9b20f88de01a4eb0638a83c833b1c184359a4eda864e HTTP/1.1
Host:example.amazonaws.com
My-Header1:value4
My-Header1:value1
My-Header1:value3
My-Header1:value2

"#,
        presigned_canonical_request: r#"GET
/
X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host%3Bmy-header1
host:example.amazonaws.com
my-header1:value4,value1,value3,value2

host;my-header1
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        presigned_string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
f4d3f13084ba7664111670ce26458291d3e0c620acd9384f8cd6b60d8e83423e"#,
        presigned_signature: "313720e71ca6202fdcfa9b20f88de01a4eb0638a83c833b1c184359a4eda864e",
    },
    Case {
        name: "get-header-value-trim",
        signed_request: r#"GET / HTTP/1.1
Host:example.amazonaws.com
My-Header1: value1
My-Header2: "a   b   c"
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;my-header1;my-header2;x-amz-date, Signature=acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736

"#,
        canonical_request: r#"GET
/

host:example.amazonaws.com
my-header1:value1
my-header2:"a b c"
x-amz-date:20150830T123600Z

host;my-header1;my-header2;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
a726db9b0df21c14f559d0a978e563112acb1b9e05476f0a6a1c7d68f28605c7"#,
        signature: "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736",
        presigned_request: r#"GET /?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host%3Bmy-header1%3Bmy-header2&X-Amz-Expires=3600&X-Amz-Signature=e7bb0fd515e125e1aec2ecc4c0c17484fb06f6846b927c35e46005dd3df3acd4 HTTP/1.1
Host:example.amazonaws.com
My-Header1: value1
My-Header2: "a   b   c"

"#,
        presigned_canonical_request: r#"GET
/
X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host%3Bmy-header1%3Bmy-header2
host:example.amazonaws.com
my-header1:value1
my-header2:"a b c"

host;my-header1;my-header2
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        presigned_string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
84c9e353b6161b689210977f93b93e6a7182f9ecb2ceae8af8c3d86b080a88ae"#,
        presigned_signature: "e7bb0fd515e125e1aec2ecc4c0c17484fb06f6846b927c35e46005dd3df3acd4",
    },
    Case {
        name: "get-relative-unnormalized",
        signed_request: r#"GET /example/.. HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=eca7ead57bb5aa5c8e28007acd4ff04e1ff9a0ff3b237ec1554a184887ff9282

"#,
        canonical_request: r#"GET
/example/..

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
0511f456aa502b456d135fcb9d749374a55228f9dbeedda1eacf659e05b0615b"#,
        signature: "eca7ead57bb5aa5c8e28007acd4ff04e1ff9a0ff3b237ec1554a184887ff9282",
        presigned_request: r#"GET /example/..?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=cbcb213b928a077e43275df47b500f1dfaa864ab3f5a18f6b95f4ff0938167ee HTTP/1.1
Host:example.amazonaws.com

"#,
        presigned_canonical_request: r#"GET
/example/..
X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host
host:example.amazonaws.com

host
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        presigned_string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
6e02e2dba21d6f269bae339b86ff27a4b7bbc9d88c482abccbfbf8a49d602482"#,
        presigned_signature: "cbcb213b928a077e43275df47b500f1dfaa864ab3f5a18f6b95f4ff0938167ee",
    },
    Case {
        name: "get-relative-relative-unnormalized",
        signed_request: r#"GET /example1/example2/../.. HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=dc33e0856fd4baca4d7aa2146c38958283844764f38c74252a333df5e613003b

"#,
        canonical_request: r#"GET
/example1/example2/../..

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
76115030c0f3ff06c20fdff5ceb6d5e0b835a1743e00b94fea7c7f381269437b"#,
        signature: "dc33e0856fd4baca4d7aa2146c38958283844764f38c74252a333df5e613003b",
        presigned_request: r#"GET /example1/example2/../..?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=b45db0bfd1cf15003493b733e33aa208dd981bd0e63037a6ed953f71d2118a16 HTTP/1.1
Host:example.amazonaws.com

"#,
        presigned_canonical_request: r#"GET
/example1/example2/../..
X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host
host:example.amazonaws.com

host
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        presigned_string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
13b7758115ec070fe36a7ae9d754154ad73f6ee9a5eac022494857d0e7effc18"#,
        presigned_signature: "b45db0bfd1cf15003493b733e33aa208dd981bd0e63037a6ed953f71d2118a16",
    },
    Case {
        name: "get-slash-dot-slash-unnormalized",
        signed_request: r#"GET /./ HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=68714168e6557f8f2de0ef956fc24dc2593a4bd2961f8df51898d8a134695145

"#,
        canonical_request: r#"GET
/./

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
d67825e2268bd77a97c7688b8d72c31a3c1855b309808505ba0a9747d2465aa7"#,
        signature: "68714168e6557f8f2de0ef956fc24dc2593a4bd2961f8df51898d8a134695145",
        presigned_request: r#"GET /./?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=a9b13e8f3484d9505bf1a6f347219f8f35b0fe8f128ceea597efc146a3dfe90c HTTP/1.1
Host:example.amazonaws.com

"#,
        presigned_canonical_request: r#"GET
/./
X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host
host:example.amazonaws.com

host
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        presigned_string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
21b2da17873f30c1a7410efdc271738b318ccc2c9c6fbe1289fc242aeb1a8ae1"#,
        presigned_signature: "a9b13e8f3484d9505bf1a6f347219f8f35b0fe8f128ceea597efc146a3dfe90c",
    },
    Case {
        name: "get-slash-pointless-dot-unnormalized",
        signed_request: r#"GET /./example HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=beb03f223f7deae4146464f06e29eebbee9c8afbe15c290cf07aa8b119e14cff

"#,
        canonical_request: r#"GET
/./example

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
73895e0e829507e28e39fd24669aedc2434a8e179e547e3c075b42921f952cdb"#,
        signature: "beb03f223f7deae4146464f06e29eebbee9c8afbe15c290cf07aa8b119e14cff",
        presigned_request: r#"GET /./example?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=72b11f16d9530b18204bfb71f2d6ab085894c0ed8d352730a6e76234c58b5e10 HTTP/1.1
Host:example.amazonaws.com

"#,
        presigned_canonical_request: r#"GET
/./example
X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host
host:example.amazonaws.com

host
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        presigned_string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
cb23444939471187ac1f0fb25d437337af0d5f48b5ae0ede5baa3727c8c6af92"#,
        presigned_signature: "72b11f16d9530b18204bfb71f2d6ab085894c0ed8d352730a6e76234c58b5e10",
    },
    Case {
        name: "get-slash-unnormalized",
        signed_request: r#"GET // HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=c88bcd3d312d75078c0cd961d6deae3f4c754924b01669efcfcb439fd5e5b76e

"#,
        canonical_request: r#"GET
//

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
80cb39203d058af815de2b79250ff56e1b73eb9b4718c86556cdc6f150c5d209"#,
        signature: "c88bcd3d312d75078c0cd961d6deae3f4c754924b01669efcfcb439fd5e5b76e",
        presigned_request: r#"GET //?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=b2a9542809db687769200f56a844a03f2bd0291d6eb90232d5101c6a579446cd HTTP/1.1
Host:example.amazonaws.com

"#,
        presigned_canonical_request: r#"GET
//
X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host
host:example.amazonaws.com

host
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        presigned_string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
e10a01494cafa1f2207c4de80c69b7a36d6f2d282aa63ee64a5ca50e175cf730"#,
        presigned_signature: "b2a9542809db687769200f56a844a03f2bd0291d6eb90232d5101c6a579446cd",
    },
    Case {
        name: "get-slashes-unnormalized",
        signed_request: r#"GET //example// HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=87cca117541a147f6df867677d98a7d80dff226d2bfca9e4ffa899665623c7e5

"#,
        canonical_request: r#"GET
//example//

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
528ec3105ee1f34ab014bb0a1a45da0ed2742a4fea3555149e5b4d5d201eb240"#,
        signature: "87cca117541a147f6df867677d98a7d80dff226d2bfca9e4ffa899665623c7e5",
        presigned_request: r#"GET //example//?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=822a5a9ba28072c5ab2bb4a6307d0c88276d40e49fec6b724c03fb4d4ba60fc2 HTTP/1.1
Host:example.amazonaws.com

"#,
        presigned_canonical_request: r#"GET
//example//
X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host
host:example.amazonaws.com

host
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        presigned_string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
82241114f9a6320f054333c890952474aa7a0069d28a4326c3a8d95bbecc69ee"#,
        presigned_signature: "822a5a9ba28072c5ab2bb4a6307d0c88276d40e49fec6b724c03fb4d4ba60fc2",
    },
    Case {
        name: "get-space-normalized",
        signed_request: r#"GET /example space/ HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741

"#,
        canonical_request: r#"GET
/example%20space/

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
63ee75631ed7234ae61b5f736dfc7754cdccfedbff4b5128a915706ee9390d86"#,
        signature: "652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741",
        presigned_request: r#"GET /example space/?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=7a1f416954786484c9824d93c1f26ef64acb9b1b6c9154d08c9f07d0e394abf6 HTTP/1.1
Host:example.amazonaws.com

"#,
        presigned_canonical_request: r#"GET
/example%20space/
X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host
host:example.amazonaws.com

host
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        presigned_string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
cc3dd817bd405e51225826ec4934a96d065d6af5b6b0163c7a5abbd26a84519e"#,
        presigned_signature: "7a1f416954786484c9824d93c1f26ef64acb9b1b6c9154d08c9f07d0e394abf6",
    },
    Case {
        name: "get-space-unnormalized",
        signed_request: r#"GET /example space/ HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741

"#,
        canonical_request: r#"GET
/example%20space/

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
63ee75631ed7234ae61b5f736dfc7754cdccfedbff4b5128a915706ee9390d86"#,
        signature: "652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741",
        presigned_request: r#"GET /example space/?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=7a1f416954786484c9824d93c1f26ef64acb9b1b6c9154d08c9f07d0e394abf6 HTTP/1.1
Host:example.amazonaws.com

"#,
        presigned_canonical_request: r#"GET
/example%20space/
X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host
host:example.amazonaws.com

host
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        presigned_string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
cc3dd817bd405e51225826ec4934a96d065d6af5b6b0163c7a5abbd26a84519e"#,
        presigned_signature: "7a1f416954786484c9824d93c1f26ef64acb9b1b6c9154d08c9f07d0e394abf6",
    },
    Case {
        name: "get-unreserved",
        signed_request: r#"GET /-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f

"#,
        canonical_request: r#"GET
/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
6a968768eefaa713e2a6b16b589a8ea192661f098f37349f4e2c0082757446f9"#,
        signature: "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f",
        presigned_request: r#"GET /-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=95968482db1b9e0fadef6efc1bd24689f77c77d9ef56919c96a28cc92e0d6005 HTTP/1.1
Host:example.amazonaws.com

"#,
        presigned_canonical_request: r#"GET
/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz
X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host
host:example.amazonaws.com

host
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        presigned_string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
3134f2fbc6ef58f34b74b01643a159bfccbc121ea4288a4b75e65bc805d08219"#,
        presigned_signature: "95968482db1b9e0fadef6efc1bd24689f77c77d9ef56919c96a28cc92e0d6005",
    },
    Case {
        name: "get-utf8",
        signed_request: r#"GET /ሴ HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85

"#,
        canonical_request: r#"GET
/%E1%88%B4

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
2a0a97d02205e45ce2e994789806b19270cfbbb0921b278ccf58f5249ac42102"#,
        signature: "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85",
        presigned_request: r#"GET /ሴ?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=10eae3f14a260bd3911cc6d008d3c576d143b05b62f09782a7a4b37f52178e44 HTTP/1.1
Host:example.amazonaws.com

"#,
        presigned_canonical_request: r#"GET
/%E1%88%B4
X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host
host:example.amazonaws.com

host
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        presigned_string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
d8f78e05d0d9bb1c16ae1e60ed405de76cfb8fdcd3e414ffe65fad563b996d66"#,
        presigned_signature: "10eae3f14a260bd3911cc6d008d3c576d143b05b62f09782a7a4b37f52178e44",
    },
    Case {
        name: "get-vanilla-empty-query-key",
        signed_request: r#"GET /?Param1=value1 HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=a67d582fa61cc504c4bae71f336f98b97f1ea3c7a6bfe1b6e45aec72011b9aeb

"#,
        canonical_request: r#"GET
/
Param1=value1
host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
1e24db194ed7d0eec2de28d7369675a243488e08526e8c1c73571282f7c517ab"#,
        signature: "a67d582fa61cc504c4bae71f336f98b97f1ea3c7a6bfe1b6e45aec72011b9aeb",
        presigned_request: r#"GET /?Param1=value1&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=49096700cbbaa5753443850f40df10f904fc2fdb544dc9512203cc77c471a9de HTTP/1.1
Host:example.amazonaws.com

"#,
        presigned_canonical_request: r#"GET
/
Param1=value1&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host
host:example.amazonaws.com

host
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        presigned_string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
74828b608f939673ed5a839190452a943b0178760f258da766209b21f8ca3f86"#,
        presigned_signature: "49096700cbbaa5753443850f40df10f904fc2fdb544dc9512203cc77c471a9de",
    },
    Case {
        name: "get-vanilla-query",
        signed_request: r#"GET / HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31

"#,
        canonical_request: r#"GET
/

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63"#,
        signature: "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
        presigned_request: r#"GET /?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844b25b7192d3865d HTTP/1.1
Host:example.amazonaws.com

"#,
        presigned_canonical_request: r#"GET
/
X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host
host:example.amazonaws.com

host
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        presigned_string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
bb7705b4aa3cb8e8f5e1e0b3d4c0b64030797a313c8ceee43e33117cc43eadc5"#,
        presigned_signature: "e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844b25b7192d3865d",
    },
    Case {
        name: "get-vanilla-query-order-encoded",
        signed_request: r#"GET /?Param-3=Value3&Param=Value2&%E1%88%B4=Value1 HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=371d3713e185cc334048618a97f809c9ffe339c62934c032af5a0e595648fcac

"#,
        canonical_request: r#"GET
/
%E1%88%B4=Value1&Param=Value2&Param-3=Value3
host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
868294f5c38bd141c4972a373a76654f1418a8e4fc18b2e7903ae45e8ae0ec71"#,
        signature: "371d3713e185cc334048618a97f809c9ffe339c62934c032af5a0e595648fcac",
        presigned_request: r#"GET /?Param-3=Value3&Param=Value2&%E1%88%B4=Value1&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=c5f1848ceec943ac2ca68ee720460c23aaae30a2300586597ada94c4a65e4787 HTTP/1.1
Host:example.amazonaws.com

"#,
        presigned_canonical_request: r#"GET
/
%E1%88%B4=Value1&Param=Value2&Param-3=Value3&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host
host:example.amazonaws.com

host
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        presigned_string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
9808d6cdc8245c74e705c68350fc6a62b91778cdd613890e5d177998c02c6f53"#,
        presigned_signature: "c5f1848ceec943ac2ca68ee720460c23aaae30a2300586597ada94c4a65e4787",
    },
    Case {
        name: "get-vanilla-query-order-key-case",
        signed_request: r#"GET /?Param2=value2&Param1=value1 HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500

"#,
        canonical_request: r#"GET
/
Param1=value1&Param2=value2
host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
816cd5b414d056048ba4f7c5386d6e0533120fb1fcfa93762cf0fc39e2cf19e0"#,
        signature: "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500",
        presigned_request: r#"GET /?Param2=value2&Param1=value1&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=86012e2c9ad4d77369f5d81c11f75158aae4f895a085212cc6d3f923d300bed5 HTTP/1.1
Host:example.amazonaws.com

"#,
        presigned_canonical_request: r#"GET
/
Param1=value1&Param2=value2&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host
host:example.amazonaws.com

host
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        presigned_string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
b82878ecb2ab7ad194b9fe79b2946c2a36ee1627a219408089b2d774c1a0cedb"#,
        presigned_signature: "86012e2c9ad4d77369f5d81c11f75158aae4f895a085212cc6d3f923d300bed5",
    },
    Case {
        name: "get-vanilla-query-unreserved",
        signed_request: r#"GET /?-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz=-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197

"#,
        canonical_request: r#"GET
/
-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz=-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz
host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
c30d4703d9f799439be92736156d47ccfb2d879ddf56f5befa6d1d6aab979177"#,
        signature: "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197",
        presigned_request: r#"GET /?-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz=-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=8e76a88a7433637b12778d5592799b29ad21ecd6cf6325051c21d86f0acda2bf HTTP/1.1
Host:example.amazonaws.com

"#,
        presigned_canonical_request: r#"GET
/
-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz=-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host
host:example.amazonaws.com

host
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        presigned_string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
c77f27ef2b499fbfee3f0b3c88bba7057b2b31ee9b62047078a5e0d6be91fd58"#,
        presigned_signature: "8e76a88a7433637b12778d5592799b29ad21ecd6cf6325051c21d86f0acda2bf",
    },
    Case {
        name: "get-vanilla-utf8-query",
        signed_request: r#"GET /?ሴ=bar HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04

"#,
        canonical_request: r#"GET
/
%E1%88%B4=bar
host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
eb30c5bed55734080471a834cc727ae56beb50e5f39d1bff6d0d38cb192a7073"#,
        signature: "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04",
        presigned_request: r#"GET /?ሴ=bar&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=0bdd809b1519ac4f0c1dc3540e2cc46bd0c7f778eda408b2ebf3b913d21ff600 HTTP/1.1
Host:example.amazonaws.com

"#,
        presigned_canonical_request: r#"GET
/
%E1%88%B4=bar&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host
host:example.amazonaws.com

host
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        presigned_string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
b2e8ae8e48ec880defebc6f6dc1d9fbc9f1856b33146f2943060ca71a50a7a77"#,
        presigned_signature: "0bdd809b1519ac4f0c1dc3540e2cc46bd0c7f778eda408b2ebf3b913d21ff600",
    },
    Case {
        name: "get-vanilla-with-session-token",
        signed_request: r#"GET / HTTP/1.1
Host:example.amazonaws.com
X-Amz-Security-Token:6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date;x-amz-security-token, Signature=07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8

"#,
        canonical_request: r#"GET
/

host:example.amazonaws.com
x-amz-date:20150830T123600Z
x-amz-security-token:6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267

host;x-amz-date;x-amz-security-token
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
067b36aa60031588cea4a4cde1f21215227a047690c72247f1d70b32fbbfad2b"#,
        signature: "07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8",
        presigned_request: r#"GET /?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Security-Token=6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267&X-Amz-Signature=7ff2b50b376cb4d151970630573d6291dc128cc5c2a12ffb237f73cc53f67b6c HTTP/1.1
Host:example.amazonaws.com

"#,
        presigned_canonical_request: r#"GET
/
X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-Security-Token=6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267&X-Amz-SignedHeaders=host
host:example.amazonaws.com

host
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        presigned_string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
cb30434103085aa9e73780fc60dc9a9df818fd2a7b1de12a9f6f4d791f898761"#,
        presigned_signature: "7ff2b50b376cb4d151970630573d6291dc128cc5c2a12ffb237f73cc53f67b6c",
    },
    Case {
        name: "post-header-key-case",
        signed_request: r#"POST / HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b

"#,
        canonical_request: r#"POST
/

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
553f88c9e4d10fc9e109e2aeb65f030801b70c2f6468faca261d401ae622fc87"#,
        signature: "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b",
        presigned_request: r#"POST /?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=2ce6e6d2e0cf2f9d1b55fafec88cd20574c31dc2e7631979f71ba2310083e95b HTTP/1.1
Host:example.amazonaws.com

"#,
        presigned_canonical_request: r#"POST
/
X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host
host:example.amazonaws.com

host
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        presigned_string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
d27fc6fe1afc1d88b248c5ae9194ec0943a693dd6d81d8d815c88a369eb0471e"#,
        presigned_signature: "2ce6e6d2e0cf2f9d1b55fafec88cd20574c31dc2e7631979f71ba2310083e95b",
    },
    Case {
        name: "post-header-key-sort",
        signed_request: r#"POST / HTTP/1.1
Host:example.amazonaws.com
My-Header1:value1
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;my-header1;x-amz-date, Signature=c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c

"#,
        canonical_request: r#"POST
/

host:example.amazonaws.com
my-header1:value1
x-amz-date:20150830T123600Z

host;my-header1;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
9368318c2967cf6de74404b30c65a91e8f6253e0a8659d6d5319f1a812f87d65"#,
        signature: "c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c",
        presigned_request: r#"POST /?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host%3Bmy-header1&X-Amz-Expires=3600&X-Amz-Signature=c09d07e0d55871f10f2a6d350d994acf6825a3cae70673d7def55616e6119dd7 HTTP/1.1
Host:example.amazonaws.com
My-Header1:value1

"#,
        presigned_canonical_request: r#"POST
/
X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host%3Bmy-header1
host:example.amazonaws.com
my-header1:value1

host;my-header1
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        presigned_string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
1295ed77e4ef8b18b32815e493e0b0f78ee47615c0ecbebfec7c75709eb58c88"#,
        presigned_signature: "c09d07e0d55871f10f2a6d350d994acf6825a3cae70673d7def55616e6119dd7",
    },
    Case {
        name: "post-header-value-case",
        signed_request: r#"POST / HTTP/1.1
Host:example.amazonaws.com
My-Header1:VALUE1
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;my-header1;x-amz-date, Signature=cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d

"#,
        canonical_request: r#"POST
/

host:example.amazonaws.com
my-header1:VALUE1
x-amz-date:20150830T123600Z

host;my-header1;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
d51ced243e649e3de6ef63afbbdcbca03131a21a7103a1583706a64618606a93"#,
        signature: "cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d",
        presigned_request: r#"POST /?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host%3Bmy-header1&X-Amz-Expires=3600&X-Amz-Signature=0698bc9e4f7f9139065ba2909c0e99da257e8e2a42492a097bcd46d792391fed HTTP/1.1
Host:example.amazonaws.com
My-Header1:VALUE1

"#,
        presigned_canonical_request: r#"POST
/
X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host%3Bmy-header1
host:example.amazonaws.com
my-header1:VALUE1

host;my-header1
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        presigned_string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
9d4d1de88f0149695a91a01275fc72dc00fb50bdc78e424f012ec860d5f8c41d"#,
        presigned_signature: "0698bc9e4f7f9139065ba2909c0e99da257e8e2a42492a097bcd46d792391fed",
    },
    Case {
        name: "post-sts-header-before",
        signed_request: r#"POST / HTTP/1.1
Host:example.amazonaws.com
X-Amz-Security-Token:AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date;x-amz-security-token, Signature=85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead

"#,
        canonical_request: r#"POST
/

host:example.amazonaws.com
x-amz-date:20150830T123600Z
x-amz-security-token:AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==

host;x-amz-date;x-amz-security-token
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
c237e1b440d4c63c32ca95b5b99481081cb7b13c7e40434868e71567c1a882f6"#,
        signature: "85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead",
        presigned_request: r#"POST /?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Security-Token=AQoDYXdzEPT%2F%2F%2F%2F%2F%2F%2F%2F%2F%2FwEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI%2FqkPpKPi%2FkMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d%2Bxo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz%2BscqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR%2FoLxBA%3D%3D&X-Amz-Signature=46c2e3c63c1dbe7d39f8ada16fe7f001c1f56c5791441565323677f96308871c HTTP/1.1
Host:example.amazonaws.com

"#,
        presigned_canonical_request: r#"POST
/
X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-Security-Token=AQoDYXdzEPT%2F%2F%2F%2F%2F%2F%2F%2F%2F%2FwEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI%2FqkPpKPi%2FkMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d%2Bxo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz%2BscqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR%2FoLxBA%3D%3D&X-Amz-SignedHeaders=host
host:example.amazonaws.com

host
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        presigned_string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
37f7ba7a2ec89e8b29a0d637bcc70d8e8d0fdba854ddfc5bc06a12398cfe8605"#,
        presigned_signature: "46c2e3c63c1dbe7d39f8ada16fe7f001c1f56c5791441565323677f96308871c",
    },
    Case {
        name: "post-vanilla",
        signed_request: r#"POST / HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b

"#,
        canonical_request: r#"POST
/

host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
553f88c9e4d10fc9e109e2aeb65f030801b70c2f6468faca261d401ae622fc87"#,
        signature: "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b",
        presigned_request: r#"POST /?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=2ce6e6d2e0cf2f9d1b55fafec88cd20574c31dc2e7631979f71ba2310083e95b HTTP/1.1
Host:example.amazonaws.com

"#,
        presigned_canonical_request: r#"POST
/
X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host
host:example.amazonaws.com

host
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        presigned_string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
d27fc6fe1afc1d88b248c5ae9194ec0943a693dd6d81d8d815c88a369eb0471e"#,
        presigned_signature: "2ce6e6d2e0cf2f9d1b55fafec88cd20574c31dc2e7631979f71ba2310083e95b",
    },
    Case {
        name: "post-vanilla-empty-query-value",
        signed_request: r#"POST /?Param1=value1 HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11

"#,
        canonical_request: r#"POST
/
Param1=value1
host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
9d659678c1756bb3113e2ce898845a0a79dbbc57b740555917687f1b3340fbbd"#,
        signature: "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11",
        presigned_request: r#"POST /?Param1=value1&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=a9ef26247f293bffe40eeff86a0480ba8c14d31503b2e0c3399e3a16bf1a3682 HTTP/1.1
Host:example.amazonaws.com

"#,
        presigned_canonical_request: r#"POST
/
Param1=value1&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host
host:example.amazonaws.com

host
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        presigned_string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
98241d1c6f938789d34b92e16e08b7fc8fdaa774c5437ba30d505eedae43dd2b"#,
        presigned_signature: "a9ef26247f293bffe40eeff86a0480ba8c14d31503b2e0c3399e3a16bf1a3682",
    },
    Case {
        name: "post-vanilla-query",
        signed_request: r#"POST /?Param1=value1 HTTP/1.1
Host:example.amazonaws.com
X-Amz-Date:20150830T123600Z
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11

"#,
        canonical_request: r#"POST
/
Param1=value1
host:example.amazonaws.com
x-amz-date:20150830T123600Z

host;x-amz-date
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
9d659678c1756bb3113e2ce898845a0a79dbbc57b740555917687f1b3340fbbd"#,
        signature: "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11",
        presigned_request: r#"POST /?Param1=value1&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=a9ef26247f293bffe40eeff86a0480ba8c14d31503b2e0c3399e3a16bf1a3682 HTTP/1.1
Host:example.amazonaws.com

"#,
        presigned_canonical_request: r#"POST
/
Param1=value1&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host
host:example.amazonaws.com

host
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"#,
        presigned_string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
98241d1c6f938789d34b92e16e08b7fc8fdaa774c5437ba30d505eedae43dd2b"#,
        presigned_signature: "a9ef26247f293bffe40eeff86a0480ba8c14d31503b2e0c3399e3a16bf1a3682",
    },
    Case {
        name: "post-x-www-form-urlencoded",
        signed_request: r#"POST / HTTP/1.1
Content-Type:application/x-www-form-urlencoded
Host:example.amazonaws.com
Content-Length:13
X-Amz-Date:20150830T123600Z
x-amz-content-sha256:9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=content-length;content-type;host;x-amz-content-sha256;x-amz-date, Signature=d3875051da38690788ef43de4db0d8f280229d82040bfac253562e56c3f20e0b

Param1=value1"#,
        canonical_request: r#"POST
/

content-length:13
content-type:application/x-www-form-urlencoded
host:example.amazonaws.com
x-amz-content-sha256:9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e
x-amz-date:20150830T123600Z

content-length;content-type;host;x-amz-content-sha256;x-amz-date
9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e"#,
        string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
b1edd1d03544c25390e32085d55b57acc9a3961bb59415ff86c45c3d89d16cfb"#,
        signature: "d3875051da38690788ef43de4db0d8f280229d82040bfac253562e56c3f20e0b",
        presigned_request: r#"POST /?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=content-length%3Bcontent-type%3Bhost&X-Amz-Expires=3600&X-Amz-Signature=89a40deed0f26f9461242825a082d2222717248abc7ab41f552ad84a94ad46e9 HTTP/1.1
Content-Type:application/x-www-form-urlencoded
Host:example.amazonaws.com
Content-Length:13

Param1=value1"#,
        presigned_canonical_request: r#"POST
/
X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=content-length%3Bcontent-type%3Bhost
content-length:13
content-type:application/x-www-form-urlencoded
host:example.amazonaws.com

content-length;content-type;host
9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e"#,
        presigned_string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
ee5059a7c437165a28d0e775e6498be428761255d657d8c04cb1baa41de6514c"#,
        presigned_signature: "89a40deed0f26f9461242825a082d2222717248abc7ab41f552ad84a94ad46e9",
    },
    Case {
        name: "post-x-www-form-urlencoded-parameters",
        signed_request: r#"POST / HTTP/1.1
Content-Type:application/x-www-form-urlencoded; charset=utf-8
Host:example.amazonaws.com
Content-Length:13
X-Amz-Date:20150830T123600Z
x-amz-content-sha256:9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e
Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=content-length;content-type;host;x-amz-content-sha256;x-amz-date, Signature=328d1b9eaadca9f5818ef05e8392801e091653bafec24fcab71e7344e7f51422

Param1=value1"#,
        canonical_request: r#"POST
/

content-length:13
content-type:application/x-www-form-urlencoded; charset=utf-8
host:example.amazonaws.com
x-amz-content-sha256:9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e
x-amz-date:20150830T123600Z

content-length;content-type;host;x-amz-content-sha256;x-amz-date
9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e"#,
        string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
a89f1a5b53e37702ee6363ce1da3ce8f54386f3c8f352ae652153c2982a0bc4d"#,
        signature: "328d1b9eaadca9f5818ef05e8392801e091653bafec24fcab71e7344e7f51422",
        presigned_request: r#"POST /?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=content-length%3Bcontent-type%3Bhost&X-Amz-Expires=3600&X-Amz-Signature=0dbeb9b026c7b6675f266b8427efec9b4fa8b1f6ef1477d717aea231106eab4d HTTP/1.1
Content-Type:application/x-www-form-urlencoded; charset=utf-8
Host:example.amazonaws.com
Content-Length:13

Param1=value1"#,
        presigned_canonical_request: r#"POST
/
X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=content-length%3Bcontent-type%3Bhost
content-length:13
content-type:application/x-www-form-urlencoded; charset=utf-8
host:example.amazonaws.com

content-length;content-type;host
9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e"#,
        presigned_string_to_sign: r#"AWS4-HMAC-SHA256
20150830T123600Z
20150830/us-east-1/service/aws4_request
32192353b8ae6d857fac1c71cda066e6af2d3a3127ea7ac1fee22621ab4f05dc"#,
        presigned_signature: "0dbeb9b026c7b6675f266b8427efec9b4fa8b1f6ef1477d717aea231106eab4d",
    },
];
