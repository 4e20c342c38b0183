//! The objects a run generates are pairwise distinct and regenerable from (seed, id).

use std::collections::HashSet;

use ferry_core::fill::ShardedFill;
use ferry_core::md5::md5;
use ferry_loadtest::keys::{object_key, parse_object_key};
use ferry_loadtest::payload::Payload;
use ferry_loadtest::size::SizeSpec;

#[test]
fn generated_objects_are_pairwise_distinct() {
    let seed = 5;
    let fill = ShardedFill::new(seed);
    // Single-block (4 KiB) objects are where the fill alone repeats itself; sizes from the
    // stamp's length (8 bytes) up are all distinct.
    for spec in ["4KiB", "16KiB", "8..64KiB"] {
        let spec: SizeSpec = spec.parse().unwrap();
        let mut digests = HashSet::new();
        let mut keys = HashSet::new();
        for id in 0..3_000 {
            let size = spec.size_for(seed, id);
            let data = Payload::new(&fill, id).generate(size as usize);
            assert!(
                digests.insert(md5(&data)),
                "object {id} repeats another ({spec})"
            );
            let key = object_key("p/", id, size);
            assert_eq!(parse_object_key(&key), Some((id, size)));
            assert!(keys.insert(key));
        }
    }
}

#[test]
fn objects_depend_on_the_seed_and_regenerate_from_any_offset() {
    let (a, b) = (ShardedFill::new(1), ShardedFill::new(2));
    let whole = Payload::new(&a, 9).generate(100_000);
    assert_ne!(whole, Payload::new(&b, 9).generate(100_000));
    assert_eq!(
        whole,
        Payload::new(&ShardedFill::new(1), 9).generate(100_000)
    );
    // What a reader checks chunk by chunk, from any offset, is the same content.
    let mut cursor = Payload::new(&a, 9).cursor(0);
    for piece in whole.chunks(7_777) {
        assert_eq!(cursor.verify(piece), Ok(()));
    }
    let mut from = Payload::new(&a, 9).cursor(54_321);
    assert_eq!(from.verify(&whole[54_321..60_000]), Ok(()));
}
