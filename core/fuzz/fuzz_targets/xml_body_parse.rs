#![no_main]

//! Every XML parser of a request body or a listing on arbitrary bytes; whatever parses and has a
//! writer must write back to a document that parses to the same value (`Delete`, a request body
//! Ferry never writes, is parsed only).

use ferry_core::s3::xml::*;
use libfuzzer_sys::fuzz_target;

macro_rules! round_trip {
    ($ty:ty, $data:expr) => {
        if let Ok(doc) = <$ty>::parse_xml($data) {
            let mut out = Vec::new();
            doc.write_xml(&mut out);
            let again = <$ty>::parse_xml(&out).expect("written document parses");
            assert_eq!(again, doc, "{}", String::from_utf8_lossy(&out));
        }
    };
}

fuzz_target!(|data: &[u8]| {
    round_trip!(CompleteMultipartUpload<'_>, data);
    let _ = Delete::parse_xml(data);
    round_trip!(ListAllMyBucketsResult<'_>, data);
    round_trip!(InitiateMultipartUploadResult<'_>, data);
    round_trip!(CompleteMultipartUploadResult<'_>, data);
    round_trip!(CopyResult<'_>, data);
    round_trip!(DeleteResult<'_>, data);
    round_trip!(ErrorResponse<'_>, data);
    round_trip!(ListBucketResult<'_>, data);
    round_trip!(ListPartsResult<'_>, data);
    round_trip!(ListMultipartUploadsResult<'_>, data);
    round_trip!(ListVersionsResult<'_>, data);
});
