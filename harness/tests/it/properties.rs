//! Property tests of the reference algorithms' invariants.

use compactbench::compress::truncate::{truncate_history_to_budget, TruncationSettings, TruncationVariant};
use compactbench::compress::{find_compress_split_point, MemoryToolOutputStore};
use compactbench::history::{self, Content};
use compactbench::json::{self, Value};
use compactbench::tokens::Estimator;
use proptest::prelude::*;

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,40}",
        "\\PC{0,20}",
        prop::collection::vec(
            prop_oneof![Just('é'), Just('😀'), Just('"'), Just('\\'), Just('\u{1}'), Just('\n'), Just('a')],
            0..30
        )
        .prop_map(|v| v.into_iter().collect()),
    ]
}

fn part() -> impl Strategy<Value = Value> {
    prop_oneof![
        text().prop_map(|t| history::text_part(&t)),
        (text(), any::<bool>()).prop_map(|(t, th)| {
            let mut p = history::text_part(&t);
            p.insert("thought", Value::Bool(th));
            p
        }),
        ("[a-z_]{1,8}", text()).prop_map(|(n, a)| Value::object([(
            "functionCall",
            Value::object([("name", Value::str(&n)), ("args", Value::object([("x", Value::str(&a))]))])
        )])),
        ("[a-z_]{1,8}", text(), 0usize..3000).prop_map(|(n, out, rep)| Value::object([(
            "functionResponse",
            Value::object([
                ("name", Value::str(&n)),
                ("response", Value::object([("output", Value::from(out.repeat(rep.max(1))))]))
            ])
        )])),
        (-1e22f64..1e22).prop_map(|x| Value::object([("n", Value::num(x))])),
    ]
}

fn content() -> impl Strategy<Value = Content> {
    (prop_oneof![Just("user"), Just("model")], prop::collection::vec(part(), 0..4))
        .prop_map(|(r, ps)| Value::object([("role", Value::str(r)), ("parts", Value::Array(ps))]))
}

fn contents() -> impl Strategy<Value = Vec<Content>> {
    prop::collection::vec(content(), 0..16)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn kept_tail_starts_at_a_plain_user_turn(h in contents(), f in 0.01f64..0.99) {
        let idx = find_compress_split_point(&h, f).unwrap();
        prop_assert!(idx <= h.len());
        if idx > 0 && idx < h.len() {
            prop_assert!(history::is_user(&h[idx]) && !history::has_function_response(&h[idx]));
        }
        if idx == h.len() && !h.is_empty() {
            // "compress everything" only when the last turn is a model turn without a pending call,
            // or when the last candidate happens to be... never past the end otherwise.
            let last = h.last().unwrap();
            let ends_clean = history::is_model(last) && !history::has_function_call(last);
            prop_assert!(ends_clean);
        }
    }

    #[test]
    fn jslen_equals_serde_json_on_ascii(s in "[ -~]{0,60}", n in -1_000_000i64..1_000_000, b in any::<bool>()) {
        let sj = serde_json::json!({"text": s, "n": n, "b": b, "arr": [s, null]});
        let v = Value::from_serde(&sj);
        prop_assert_eq!(json::jslen(&v), serde_json::to_string(&sj).unwrap().len());
        prop_assert_eq!(json::to_string(&v), serde_json::to_string(&sj).unwrap());
    }

    #[test]
    fn utf8_len_is_the_written_strings_length(h in contents(), units in prop::collection::vec(any::<u16>(), 0..12)) {
        for c in &h {
            prop_assert_eq!(json::utf8_len(c), json::to_string(c).len());
        }
        // Lone surrogates and control characters, which escaping writes longer than they are stored.
        let odd = Value::object([("text", Value::String(json::JsStr::from_utf16(&units)))]);
        prop_assert_eq!(json::utf8_len(&odd), json::to_string(&odd).len());
    }

    #[test]
    fn jslen_matches_the_written_string(h in contents()) {
        for c in &h {
            prop_assert_eq!(json::jslen(c), json::to_string(c).encode_utf16().count());
            let reparsed = json::parse_str(&json::to_string(c)).unwrap();
            prop_assert_eq!(&reparsed, c);
        }
    }

    #[test]
    fn truncation_never_touches_the_newest_budgeted_outputs(h in contents(), budget in 0u64..3000) {
        let settings = TruncationSettings { variant: TruncationVariant::Current, budget, max_chars: 100, estimator: Estimator::Current };
        let mut ids = 0;
        let mut store = MemoryToolOutputStore::new("/t");
        let t = truncate_history_to_budget(&h, &settings, &mut ids, &mut store);
        prop_assert_eq!(t.history.len(), h.len());
        // Walk newest to oldest as the algorithm does; every output that still fits is untouched.
        let mut used = 0u64;
        'outer: for (ci, c) in h.iter().enumerate().rev() {
            for (pi, p) in history::parts(c).iter().enumerate().rev() {
                if history::function_response(p).is_none() { continue; }
                let out = p.get("functionResponse").unwrap().get("response").unwrap().get("output").unwrap();
                let tok = Estimator::Current.text(out.as_js_str().unwrap());
                if used + tok > budget { break 'outer; }
                used += tok;
                prop_assert_eq!(&history::parts(&t.history[ci])[pi], p);
            }
        }
        prop_assert_eq!(store.files.len(), t.changed.len());
    }

    #[test]
    fn nothing_panics_on_arbitrary_json(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(v) = json::parse(&bytes) {
            let _ = json::jslen(&v);
            let _ = json::to_string_pretty(&v);
            if history::validate_shape(&v).is_ok() {
                let h = v.as_array().unwrap();
                let _ = find_compress_split_point(h, 0.7);
                let _ = Estimator::Current.history(h);
                let settings = TruncationSettings { variant: TruncationVariant::Current, budget: 0, max_chars: -3, estimator: Estimator::Current };
                let mut ids = 0;
                let _ = truncate_history_to_budget(h, &settings, &mut ids, &mut MemoryToolOutputStore::new("/t"));
            }
        }
    }

    #[test]
    fn nothing_panics_on_arbitrary_content_shapes(h in prop::collection::vec(arbitrary_value(3), 0..6)) {
        let v = Value::Array(h);
        if history::validate_shape(&v).is_ok() {
            let h = v.as_array().unwrap();
            let _ = find_compress_split_point(h, 0.5);
            for &e in Estimator::ALL { let _ = e.history(h); }
            let settings = TruncationSettings { variant: TruncationVariant::Current, budget: 0, max_chars: 0, estimator: Estimator::Current };
            let mut ids = 0;
            let _ = truncate_history_to_budget(h, &settings, &mut ids, &mut MemoryToolOutputStore::new("/t"));
        }
    }
}

fn arbitrary_value(depth: u32) -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<f64>().prop_filter("finite", |x| x.is_finite()).prop_map(Value::num),
        text().prop_map(Value::from),
    ];
    if depth == 0 {
        return leaf.boxed();
    }
    let key = prop_oneof![
        Just("role"),
        Just("parts"),
        Just("text"),
        Just("functionResponse"),
        Just("functionCall"),
        Just("response"),
        Just("name"),
        Just("output"),
        Just("inlineData"),
        Just("mimeType")
    ];
    prop_oneof![
        leaf,
        prop::collection::vec(arbitrary_value(depth - 1), 0..4).prop_map(Value::Array),
        prop::collection::vec((key, arbitrary_value(depth - 1)), 0..4).prop_map(Value::object),
    ]
    .boxed()
}
