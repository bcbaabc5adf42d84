//! The check that keeps an enum's strum-derived name (`IntoStaticStr`) equal to the tag serde
//! writes for it: both are derived from attributes, and nothing else ties the two together.

use serde::Serialize;
use serde_json::Value;

/// Asserts that every sample's `&'static str` name is its serde tag (the string a unit enum
/// serialises to, or the `type` field of an internally tagged one), and that the samples cover
/// `variants` (strum's `VariantNames`) one each, so a new variant cannot go unchecked.
pub fn assert_names_are_serde_tags<T>(samples: &[T], variants: &[&str])
where
    T: Serialize,
    for<'a> &'a T: Into<&'static str>,
{
    let mut covered: Vec<&str> = samples
        .iter()
        .map(|sample| {
            let name: &'static str = sample.into();
            let json = serde_json::to_value(sample).expect("a sample serialises");
            let tag = json
                .as_str()
                .or_else(|| json.get("type").and_then(Value::as_str));
            assert_eq!(tag, Some(name), "serde wrote {json}");
            name
        })
        .collect();
    let mut expected = variants.to_vec();
    covered.sort_unstable();
    expected.sort_unstable();
    assert_eq!(covered, expected, "one sample of each variant");
}

/// The same for an enum of unit variants, each variant its own sample.
pub fn assert_unit_names_are_serde_tags<T>()
where
    T: Serialize + strum::IntoEnumIterator + strum::VariantNames,
    for<'a> &'a T: Into<&'static str>,
{
    let samples: Vec<T> = T::iter().collect();
    assert_names_are_serde_tags(&samples, T::VARIANTS);
}
