//! The writer against serde_json itself: every output must be byte-identical.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde::Serialize;
use serde_json::{Value, json};

use super::{ESCAPE, escape_mask, to_vec, write, write_str};

fn assert_like_serde<T: Serialize + ?Sized>(value: &T) {
    let ours = to_vec(value).expect("our writer");
    let theirs = serde_json::to_vec(value).expect("serde_json");
    assert_eq!(
        String::from_utf8_lossy(&ours),
        String::from_utf8_lossy(&theirs)
    );
}

#[test]
fn the_word_mask_finds_the_first_escaped_byte() {
    let first = |word: [u8; 8]| match escape_mask(u64::from_le_bytes(word)) {
        0 => None,
        mask => Some(mask.trailing_zeros() as usize / 8),
    };
    let expected = |word: [u8; 8]| word.iter().position(|b| ESCAPE[usize::from(*b)] != 0);
    for byte in 0..=255u8 {
        for position in 0..8 {
            let mut word = [b'a'; 8];
            word[position] = byte;
            assert_eq!(
                first(word),
                expected(word),
                "byte {byte:#04x} at {position}"
            );
        }
    }
    // Every pair of bytes at every pair of positions: a borrow from one byte must not hide
    // or fake an escape in the other (bytes chosen around each boundary the tricks test).
    let edges = [
        0x00, 0x01, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x5b, 0x5c, 0x5d, 0x7f, 0x80, 0xa2, 0xdc, 0xff,
    ];
    for a in edges {
        for b in edges {
            for i in 0..8 {
                for j in 0..8 {
                    let mut word = [b'x'; 8];
                    word[i] = a;
                    word[j] = b;
                    assert_eq!(first(word), expected(word), "{a:#x} at {i}, {b:#x} at {j}");
                }
            }
        }
    }
}

#[test]
fn strings_of_every_length_and_escape_position() {
    for len in 0..40 {
        for escape_at in 0..len {
            for escaped in ['\n', '"', '\\', '\u{1}', '\u{1f}', '\u{7f}', 'é', '😀'] {
                let text: String = (0..len)
                    .map(|i| if i == escape_at { escaped } else { 'x' })
                    .collect();
                assert_like_serde(&text);
            }
        }
    }
}

#[test]
fn every_value_kind_is_written_like_serde() {
    #[derive(Serialize)]
    enum Kinds {
        Unit,
        Newtype(u8),
        Tuple(i32, String),
        Struct { a: f64, b: Option<bool> },
    }
    #[derive(Serialize)]
    struct Wrapper(String);
    #[derive(Serialize)]
    struct Empty;
    #[derive(Serialize)]
    struct Mixed<'a> {
        bytes: &'a [u8],
        #[serde(with = "serde_bytes_like")]
        as_bytes: Vec<u8>,
        character: char,
        tuple: (u8, &'a str, ()),
        nan: f64,
        infinite: f32,
        small: f32,
        big: u128,
        negative: i128,
        kinds: Vec<Kinds>,
        wrapper: Wrapper,
        empty: Empty,
        none: Option<u8>,
        int_keys: BTreeMap<i64, &'a str>,
        bool_keys: BTreeMap<bool, u8>,
        char_keys: BTreeMap<char, u8>,
    }
    mod serde_bytes_like {
        pub fn serialize<S: serde::Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(v)
        }
    }
    assert_like_serde(&Mixed {
        bytes: &[1, 2, 255],
        as_bytes: vec![0, 7],
        character: '"',
        tuple: (7, "t\u{0}", ()),
        nan: f64::NAN,
        infinite: f32::NEG_INFINITY,
        small: 0.1,
        big: u128::MAX,
        negative: i128::MIN,
        kinds: vec![
            Kinds::Unit,
            Kinds::Newtype(3),
            Kinds::Tuple(-1, "x".into()),
            Kinds::Struct {
                a: 1e300,
                b: Some(false),
            },
        ],
        wrapper: Wrapper("w".into()),
        empty: Empty,
        none: None,
        int_keys: [(-3, "a"), (9, "b")].into(),
        bool_keys: [(true, 1), (false, 0)].into(),
        char_keys: [('\n', 1)].into(),
    });
}

#[test]
fn keys_it_does_not_handle_are_left_to_serde_json() {
    #[derive(Serialize, PartialEq, Eq, PartialOrd, Ord)]
    struct Point(u8, u8);
    // A key serde_json refuses: the error is serde_json's, and nothing is written.
    let refused: BTreeMap<Point, u8> = [(Point(1, 2), 3)].into();
    let mut out = b"kept".to_vec();
    let error = write(&mut out, &refused).expect_err("a tuple key is not a JSON key");
    assert!(error.to_string().contains("key must be"), "{error}");
    assert_eq!(out, b"kept");
    // Float keys: whatever serde_json does with them, the writer does the same.
    struct FloatKeys;
    impl Serialize for FloatKeys {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_map([(1.5f64, 1u8), (-0.0, 2)])
        }
    }
    let mut ours = Vec::new();
    let result = write(&mut ours, &FloatKeys);
    match serde_json::to_vec(&FloatKeys) {
        Ok(theirs) => assert_eq!(ours, theirs),
        Err(_) => assert!(result.is_err() && ours.is_empty()),
    }
}

#[test]
fn a_failing_value_leaves_the_buffer_as_it_was() {
    struct Fails;
    impl Serialize for Fails {
        fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
            Err(serde::ser::Error::custom("no"))
        }
    }
    let mut out = b"[1,".to_vec();
    let error = write(&mut out, &json_with(Fails)).expect_err("fails");
    assert_eq!(error.to_string(), "no");
    assert_eq!(out, b"[1,");
}

fn json_with<T: Serialize>(inner: T) -> (u8, T) {
    (1, inner)
}

#[test]
fn write_str_appends() {
    let mut out = b"x=".to_vec();
    write_str(&mut out, "a\"b\tc😀\u{7}");
    assert_eq!(out, b"x=\"a\\\"b\\tc\xf0\x9f\x98\x80\\u0007\"");
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        "\\PC{0,40}".prop_map(Value::String),
        "[\"\\\\\u{0}-\u{1f}a-z \u{7f}é😀]{0,40}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(("[a-z\"\\\\\u{1}é]{0,6}", inner), 0..6)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn any_value_is_written_like_serde(value in arb_json()) {
        let ours = to_vec(&value).unwrap();
        prop_assert_eq!(ours, serde_json::to_vec(&value).unwrap());
    }

    #[test]
    fn any_string_is_written_like_serde(text in "\\PC*|[\u{0}-\u{7f}]{0,300}") {
        let mut ours = Vec::new();
        write_str(&mut ours, &text);
        prop_assert_eq!(ours, serde_json::to_vec(&text).unwrap());
    }
}
