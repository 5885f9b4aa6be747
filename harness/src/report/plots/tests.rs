//! Every plot kind rendered to PNG and SVG in a temp dir, checked as files, as images and as SVG text.
//! Set `COMPACTBENCH_PLOT_EXAMPLES=<dir>` to keep the example plots for looking at.

use std::path::{Path, PathBuf};

use super::*;

// The plot kinds filled in one call each, as the examples below draw them.

fn timeline(
    dir: &Path,
    name: &str,
    title: &str,
    series: &[Series],
    markers: &[Marker],
) -> Result<PlotFiles, PlotError> {
    let (x_label, y_label) = ("request index", "request size (tokens, as sent)");
    Timeline { title, x_label, y_label, series, markers }.render(dir, name)
}

fn timeline_legend(series: &[Series], markers: &[Marker]) -> Vec<String> {
    Timeline { title: "", x_label: "", y_label: "", series, markers }.legend()
}

fn lines(
    dir: &Path,
    name: &str,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> Result<PlotFiles, PlotError> {
    Lines { title, x_label, y_label, series, y_from_zero: false }.render(dir, name)
}

fn heatmap_described(
    dir: &Path,
    name: &str,
    title: &str,
    x_labels: &[String],
    y_labels: &[String],
    values: &[Vec<Option<f64>>],
    desc: &HeatmapDesc,
) -> Result<PlotFiles, PlotError> {
    Heatmap { title, x_labels, y_labels, values, desc }.render(dir, name)
}

fn heatmap(
    dir: &Path,
    name: &str,
    title: &str,
    x_labels: &[String],
    y_labels: &[String],
    values: &[Vec<Option<f64>>],
) -> Result<PlotFiles, PlotError> {
    heatmap_described(dir, name, title, x_labels, y_labels, values, &HeatmapDesc::default())
}

fn heatmap_colour_bar(values: &[Vec<Option<f64>>], desc: &HeatmapDesc) -> Option<((f64, f64), Vec<String>, String)> {
    Heatmap { title: "", x_labels: &[], y_labels: &[], values, desc }.colour_bar()
}

fn pareto(
    dir: &Path,
    name: &str,
    title: &str,
    x_label: &str,
    y_label: &str,
    points: &[(String, f64, f64)],
) -> Result<PlotFiles, PlotError> {
    Pareto { title, x_label, y_label, points }.render(dir, name)
}

fn pareto_labels(points: &[(String, f64, f64)]) -> Vec<(usize, String)> {
    Pareto { title: "", x_label: "", y_label: "", points }.labels()
}

fn histogram(
    dir: &Path,
    name: &str,
    title: &str,
    x_label: &str,
    values: &[f64],
    bins: usize,
) -> Result<PlotFiles, PlotError> {
    Histogram { title, x_label, values, bins, range: None }.render(dir, name)
}

/// Deterministic pseudo-random numbers in [0, 1) (an LCG), so the examples need no `rand` seed setup.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A sawtooth per strategy over 60 requests, with 4 compression events in all.
fn timeline_data() -> (Vec<Series>, Vec<Marker>) {
    let mut series = Vec::new();
    let mut markers = Vec::new();
    let strategies = [("none", f64::INFINITY, 1.0), ("summary-50%", 90_000.0, 0.5), ("llm-compact", 120_000.0, 0.3)];
    for (s, &(name, limit, keep)) in strategies.iter().enumerate() {
        let mut ctx = 4_000.0;
        let mut points = Vec::new();
        for i in 0..60 {
            ctx += 2_200.0 + (i % 7) as f64 * 300.0;
            if ctx > limit {
                ctx *= keep;
                let label = if markers.len() == 2 { "INFLATED" } else { "COMPRESSED" };
                markers.push(Marker { x: i as f64, series: s, label: label.into() });
            }
            points.push((i as f64, ctx));
        }
        series.push(Series { name: name.into(), points });
    }
    assert_eq!(markers.len(), 4, "the example should have 4 events");
    (series, markers)
}

fn lines_data() -> Vec<Series> {
    ["default prompt", "terse prompt", "structured prompt"]
        .iter()
        .enumerate()
        .map(|(v, name)| Series {
            name: (*name).into(),
            points: [0.5, 0.6, 0.7, 0.8, 0.9]
                .iter()
                .map(|&t| (t, 0.15 + 0.1 * v as f64 + 0.5 * (t - 0.5) * (1.0 - 0.2 * v as f64)))
                .collect(),
        })
        .collect()
}

fn heatmap_data() -> (Vec<String>, Vec<String>, Vec<Vec<Option<f64>>>) {
    let x = vec!["0.5".to_string(), "0.7".into(), "0.9".into()];
    let y = vec!["none".to_string(), "truncate-middle".into(), "summary".into(), "llm-compact".into()];
    let v = vec![
        vec![Some(0.0), Some(0.0), Some(0.0)],
        vec![Some(0.31), Some(0.42), Some(0.55)],
        vec![Some(0.28), None, Some(0.61)],
        vec![Some(0.12), Some(0.37), Some(0.48)],
    ];
    (x, y, v)
}

fn pareto_data() -> Vec<(String, f64, f64)> {
    // A trade-off: more tokens kept, more retained, minus noise (so some configs are dominated).
    let mut rng = Lcg(7);
    (0..10)
        .map(|i| {
            let x = 0.25 + 0.7 * rng.next();
            let y = 0.5 + 0.45 * ((x - 0.25) / 0.7).sqrt() - 0.15 * rng.next();
            (format!("cfg-{i}"), x, y)
        })
        .collect()
}

fn histogram_data() -> Vec<f64> {
    let mut rng = Lcg(42);
    (0..200).map(|_| -0.3 + 0.9 * (rng.next() + rng.next() + rng.next()) / 3.0).collect()
}

/// Renders every example into `dir`; returns (files, expected title, expected texts in the SVG).
fn render_all(dir: &Path) -> Vec<(PlotFiles, Vec<String>)> {
    let mut out = Vec::new();
    let (series, markers) = timeline_data();
    let files = timeline(dir, "timeline", "Context per request", &series, &markers).unwrap();
    let mut texts =
        vec!["Context per request".to_string(), "request index".into(), "request size (tokens, as sent)".into()];
    texts.extend(series.iter().map(|s| s.name.clone()));
    out.push((files, texts));

    let series = lines_data();
    let files = lines(
        dir,
        "lines",
        "Token reduction by threshold",
        "threshold (fraction of window)",
        "reduction (fraction)",
        &series,
    )
    .unwrap();
    let mut texts = vec![
        "Token reduction by threshold".to_string(),
        "threshold (fraction of window)".into(),
        "reduction (fraction)".into(),
    ];
    texts.extend(series.iter().map(|s| s.name.clone()));
    out.push((files, texts));

    let (x, y, v) = heatmap_data();
    let desc = HeatmapDesc {
        x_desc: "threshold".into(),
        y_desc: "strategy".into(),
        value_desc: "reduction".into(),
        range: Some((0.0, 1.0)),
        suffix: String::new(),
    };
    let files = heatmap_described(dir, "heatmap", "Reduction by strategy and threshold", &x, &y, &v, &desc).unwrap();
    let mut texts =
        vec!["Reduction by strategy and threshold".to_string(), "threshold".into(), "strategy".into(), "n/a".into()];
    texts.extend(x.iter().chain(&y).cloned());
    out.push((files, texts));

    let points = pareto_data();
    let files =
        pareto(dir, "pareto", "Cost versus retention", "cumulative tokens (vs none)", "retention", &points).unwrap();
    let mut texts = vec![
        "Cost versus retention".to_string(),
        "cumulative tokens (vs none)".into(),
        "retention".into(),
        "Pareto front".into(),
    ];
    texts.extend(points.iter().map(|p| p.0.clone()));
    out.push((files, texts));

    let values = histogram_data();
    let files = histogram(dir, "histogram", "Score change after compression", "score delta", &values, 20).unwrap();
    let texts =
        vec!["Score change after compression".to_string(), "score delta".into(), "count".into(), "n = 200".into()];
    out.push((files, texts));
    out
}

fn check_png(path: &Path) {
    let img = image::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).to_rgb8();
    assert_eq!(img.dimensions(), PLOT_SIZE, "{}", path.display());
    let first = *img.get_pixel(0, 0);
    assert!(img.pixels().any(|p| *p != first), "{} is a single flat colour", path.display());
    // Text is rasterised: some dark, nearly black pixels exist (title, labels).
    assert!(img.pixels().any(|p| p.0.iter().all(|&c| c < 60)), "{} has no text-dark pixels", path.display());
}

/// Texts of `<text>` elements (unescaped minimally).
fn svg_texts(svg: &str) -> Vec<String> {
    let mut texts = Vec::new();
    let mut rest = svg;
    while let Some(start) = rest.find("<text") {
        let after = &rest[start..];
        let Some(open_end) = after.find('>') else { break };
        let Some(close) = after.find("</text>") else { break };
        texts.push(after[open_end + 1..close].trim().replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"));
        rest = &after[close..];
    }
    texts
}

fn examples_dir() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir =
        std::env::var_os("COMPACTBENCH_PLOT_EXAMPLES").map(PathBuf::from).unwrap_or_else(|| tmp.path().to_path_buf());
    (tmp, dir)
}

#[test]
fn every_kind_renders_png_and_svg() {
    let (_tmp, dir) = examples_dir();
    for (files, texts) in render_all(&dir) {
        for p in [&files.png, &files.svg] {
            assert!(std::fs::metadata(p).unwrap().len() > 0, "{} is empty", p.display());
        }
        check_png(&files.png);
        let svg = std::fs::read_to_string(&files.svg).unwrap();
        assert!(svg.starts_with("<svg") || svg.starts_with("<?xml"), "{}", files.svg.display());
        let found = svg_texts(&svg);
        for t in &texts {
            assert!(
                found.iter().any(|f| f.contains(t.as_str())),
                "{}: no text {t:?} in {found:?}",
                files.svg.display()
            );
        }
    }
}

#[test]
fn one_legend_entry_per_series() {
    let tmp = tempfile::tempdir().unwrap();
    let (series, markers) = timeline_data();
    let files = timeline(tmp.path(), "t", "T", &series, &markers).unwrap();
    let found = svg_texts(&std::fs::read_to_string(&files.svg).unwrap());
    for s in &series {
        assert_eq!(found.iter().filter(|t| **t == s.name).count(), 1, "{}", s.name);
    }
    for kind in ["COMPRESSED", "INFLATED"] {
        let entry = format!("{kind} event (marker coloured as its line)");
        assert_eq!(found.join(" ").matches(&entry).count(), 1, "{entry} in {found:?}");
    }

    let series = lines_data();
    let files = lines(tmp.path(), "l", "L", "x", "y", &series).unwrap();
    let found = svg_texts(&std::fs::read_to_string(&files.svg).unwrap());
    for s in &series {
        assert_eq!(found.iter().filter(|t| **t == s.name).count(), 1, "{}", s.name);
    }
}

#[test]
fn svg_is_byte_identical_across_runs() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (ra, rb) = (render_all(a.path()), render_all(b.path()));
    for ((fa, _), (fb, _)) in ra.iter().zip(&rb) {
        assert_eq!(std::fs::read(&fa.svg).unwrap(), std::fs::read(&fb.svg).unwrap(), "{}", fa.svg.display());
        assert_eq!(std::fs::read(&fa.png).unwrap(), std::fs::read(&fb.png).unwrap(), "{}", fa.png.display());
    }
}

#[test]
fn degenerate_inputs_draw_without_panicking() {
    let (_tmp, dir) = examples_dir();
    let d = &dir.join("degenerate");
    let s = |name: &str, points: Vec<(f64, f64)>| Series { name: name.into(), points };
    let nan = f64::NAN;
    let inf = f64::INFINITY;
    let cases: Vec<Vec<Series>> = vec![
        vec![],
        vec![s("empty", vec![])],
        vec![s("one", vec![(3.0, 5.0)])],
        vec![s("flat", vec![(0.0, 7.0), (1.0, 7.0), (2.0, 7.0)])],
        vec![s("same x", vec![(1.0, 1.0), (1.0, 2.0)])],
        vec![s("zeros", vec![(0.0, 0.0), (0.0, 0.0)])],
        vec![s("nan", vec![(nan, 1.0), (1.0, nan), (inf, 2.0), (2.0, -inf)])],
        vec![s("mixed", vec![(nan, 1.0), (1.0, 2.0)]), s("", vec![(-1e300, 1e300), (1e300, -1e300)])],
        vec![s("tiny", vec![(0.0, 1e-300), (1e-300, 2e-300)])],
    ];
    let markers = vec![
        Marker { x: 1.0, series: 0, label: "a".into() },
        Marker { x: nan, series: 0, label: "nan".into() },
        Marker { x: 2.0, series: 99, label: "out of range".into() },
    ];
    // Each render costs about half a second unoptimised, so the variants are spread over the cases.
    for (i, series) in cases.iter().enumerate() {
        if i % 2 == 0 {
            timeline(d, &format!("t{i}"), "degenerate", series, &markers).unwrap();
        } else {
            timeline(d, &format!("t{i}"), "", series, &[]).unwrap();
        }
        lines(d, &format!("l{i}"), "degenerate", "x", "y", series).unwrap();
        let points: Vec<(String, f64, f64)> =
            series.iter().flat_map(|s| s.points.iter().map(|p| (s.name.clone(), p.0, p.1))).collect();
        pareto(d, &format!("p{i}"), "degenerate", "x", "y", &points).unwrap();
        let values: Vec<f64> = series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).collect();
        let bins = [0, 1, 20][i % 3];
        histogram(d, &format!("h{i}"), "degenerate", "x", &values, bins).unwrap();
    }
    histogram(d, "h-huge-bins", "huge bins", "x", &[0.0, 1.0, 2.0], usize::MAX).unwrap();
    let strs = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    heatmap(d, "hm-empty", "empty", &[], &[], &[]).unwrap();
    heatmap(d, "hm-none", "all none", &strs(&["a"]), &strs(&["r"]), &[vec![None]]).unwrap();
    heatmap(d, "hm-nan", "nan", &strs(&["a", "b"]), &strs(&["r"]), &[vec![Some(nan), Some(1.0)]]).unwrap();
    heatmap(d, "hm-flat", "flat", &strs(&["a", "b"]), &strs(&["r", "s"]), &[vec![Some(2.0); 2], vec![Some(2.0); 2]])
        .unwrap();
    heatmap(d, "hm-ragged", "ragged", &strs(&["a"]), &strs(&[]), &[vec![Some(1.0), Some(2.0)], vec![]]).unwrap();
    let long = "a very long label that will never fit in the space available for it at all".to_string();
    heatmap(
        d,
        "hm-long",
        &long.repeat(3),
        &vec![long.clone(); 12],
        &vec![long.clone(); 30],
        &vec![vec![Some(1.0); 12]; 30],
    )
    .unwrap();
    let many: Vec<Series> = (0..40).map(|i| s(&format!("{long} {i}"), vec![(i as f64, i as f64)])).collect();
    lines(d, "many", &long, &long, &long, &many).unwrap();
    for name in ["t0", "l1", "p2", "h3", "hm-empty", "hm-none", "many"] {
        check_png(&d.join(format!("{name}.png")));
    }
    let svg = std::fs::read_to_string(d.join("l0.svg")).unwrap();
    assert!(svg_texts(&svg).iter().any(|t| t == "no data"));
}

#[test]
fn pareto_front_is_lower_x_higher_y() {
    let pts = [(1.0, 0.5), (2.0, 0.9), (1.5, 0.4), (3.0, 0.95), (2.5, 0.8), (f64::NAN, 1.0), (0.5, 0.5)];
    assert_eq!(pareto_front(&pts), vec![6, 1, 3]);
    assert_eq!(pareto_front(&[]), Vec::<usize>::new());
    assert_eq!(pareto_front(&[(1.0, 1.0), (1.0, 1.0)]), vec![0, 1]);
}

#[test]
fn unwritable_dir_is_an_error_not_a_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("not-a-dir");
    std::fs::write(&file, "x").unwrap();
    let err = histogram(&file, "h", "t", "x", &[1.0], 3).unwrap_err();
    assert_eq!(err.name, "h");
}

/// The timeline of the default run's `task003-trial0` (request sizes as the run measured them): five
/// strategies, `truncation-only` exactly equal to `none`, long labels.
fn run_like_timeline() -> (Vec<Series>, Vec<Marker>) {
    let none = vec![
        1775, 1817, 1858, 2333, 2682, 3087, 3487, 3943, 4337, 4657, 5091, 5164, 5284, 6613, 7022, 7119, 7214, 7309,
        7498, 7682, 7860, 7919, 8098, 8209, 8364, 8539, 8714, 8887, 8949, 9453,
    ];
    let gemini = vec![
        1775, 1817, 1858, 2333, 2682, 3087, 3487, 3943, 4467, 4811, 5245, 2916, 3036, 4365, 2572, 2669, 2764, 2859,
        3048, 3232, 3410, 3469, 3648, 3200, 3355, 3530, 3705, 3351, 3413, 3917,
    ];
    let masking = vec![
        1775, 1817, 1858, 2333, 2682, 3087, 3487, 3943, 4337, 4276, 4455, 4220, 4340, 5364, 5410, 5507, 5301, 5173,
        5020, 5204, 5382, 5452, 5631, 4528, 4695, 4870, 5054, 5236, 5300, 5804,
    ];
    let drop = vec![
        1775, 1817, 1858, 2333, 2682, 3087, 3487, 3943, 4337, 4657, 5091, 5164, 1900, 3229, 3638, 3735, 3830, 3925,
        4114, 4298, 4476, 4535, 2849, 2960, 3115, 3290, 3465, 3638, 3700, 4204,
    ];
    let s = |name: &str, t: &[u32]| Series {
        name: name.into(),
        points: t.iter().enumerate().map(|(i, &v)| (i as f64, v as f64)).collect(),
    };
    let series = vec![
        s("gemini t=0.5 keep=0.3 prompt=v5 verify=true split=current (reference)", &gemini),
        s("truncation-only t=0.5", &none),
        s("observation-masking mask-after=3 keep-recent=2", &masking),
        s("drop-oldest t=0.5 drop-keep=0.5", &drop),
        s("none", &none),
    ];
    let m = |x: f64, series: usize| Marker { x, series, label: "COMPRESSED".into() };
    let markers = [8.0, 9.0, 10.0, 11.0, 14.0, 23.0, 27.0]
        .iter()
        .map(|&x| m(x, 0))
        .chain([12.0, 22.0].iter().map(|&x| m(x, 3)))
        .collect();
    (series, markers)
}

#[test]
fn timeline_legend_names_identical_series_and_event_kinds() {
    let (series, markers) = run_like_timeline();
    insta::assert_snapshot!(timeline_legend(&series, &markers).join("\n"), @r"
    gemini t=0.5 keep=0.3 prompt=v5 verify=true split=current (reference)
    truncation-only t=0.5 (same as none)
    observation-masking mask-after=3 keep-recent=2
    drop-oldest t=0.5 drop-keep=0.5
    none (same as truncation-only t=0.5)
    COMPRESSED event (marker coloured as its line)
    ");
    // Identical series: the first wide and solid underneath, the second thin and dashed on top.
    let strokes = timeline::strokes(&series);
    let wide = draw::Stroke { width: 5, dash: None };
    let plain = draw::Stroke { width: 2, dash: None };
    let dashed = draw::Stroke { width: 2, dash: Some((10, 6)) };
    assert_eq!(strokes, vec![plain, wide, plain, plain, dashed]);
    // Labels naming each event do not make one legend entry each.
    let many: Vec<Marker> = (0..9).map(|i| Marker { x: i as f64, series: 0, label: format!("#{i}") }).collect();
    assert_eq!(timeline_legend(&series[..1], &many)[1], "compression event (marker coloured as its line)");
}

#[test]
fn run_like_timeline_draws_every_label_whole() {
    let (_tmp, dir) = examples_dir();
    let (series, markers) = run_like_timeline();
    let title = "Request size per request: task003-trial0";
    let files = timeline(&dir, "run-timeline", title, &series, &markers).unwrap();
    check_png(&files.png);
    let found = svg_texts(&std::fs::read_to_string(&files.svg).unwrap());
    assert!(found.iter().all(|t| !t.contains('…')), "shortened text in {found:?}");
    // Every legend entry is drawn whole (wrapped lines joined back).
    let text = found.join(" ");
    for label in timeline_legend(&series, &markers) {
        assert!(text.contains(&label), "{label:?} not in {found:?}");
    }
    assert!(found.iter().any(|t| t == title));
    // No per-marker text: the legend names the kind once.
    assert_eq!(found.iter().filter(|t| t.contains("COMPRESSED")).count(), 1);
}

#[test]
fn heatmap_colour_bar_is_anchored_and_labelled() {
    let values = vec![vec![Some(33.7), Some(40.7)], vec![Some(34.4), Some(46.1)]];
    let desc = HeatmapDesc {
        x_desc: "threshold (fraction of the window)".into(),
        y_desc: "preserve fraction".into(),
        value_desc: "early-only retention (early_only_retention), %, ↑ better".into(),
        range: Some((0.0, 100.0)),
        suffix: "%".into(),
    };
    insta::assert_debug_snapshot!(heatmap_colour_bar(&values, &desc), @r#"
    Some(
        (
            (
                0.0,
                100.0,
            ),
            [
                "100%",
                "75%",
                "50%",
                "25%",
                "0%",
            ],
            "early-only retention (early_only_retention), %, ↑ better",
        ),
    )
    "#);
    // Values outside the natural range widen it; without a range the values' own; without values none.
    let over = vec![vec![Some(-5.0), Some(120.0)]];
    assert_eq!(heatmap_colour_bar(&over, &desc).unwrap().0, (-5.0, 120.0));
    let free = HeatmapDesc { range: None, ..desc.clone() };
    assert_eq!(heatmap_colour_bar(&values, &free).unwrap().0, (33.7, 46.1));
    assert_eq!(heatmap_colour_bar(&[vec![None, Some(f64::NAN)]], &desc), None);

    let (_tmp, dir) = examples_dir();
    let labels = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let title = "Early-only retention (early_only_retention) by preserve fraction × threshold";
    let files = heatmap_described(
        &dir,
        "run-heatmap",
        title,
        &labels(&["0.5", "0.7"]),
        &labels(&["0.3", "0.5"]),
        &values,
        &desc,
    )
    .unwrap();
    check_png(&files.png);
    let found = svg_texts(&std::fs::read_to_string(&files.svg).unwrap());
    assert!(found.iter().all(|t| !t.contains('…')), "shortened text in {found:?}");
    for t in [title, "100%", "0%", "33.7%", "46.1%", "preserve fraction", "threshold (fraction of the window)"] {
        assert!(found.iter().any(|f| f == t), "{t:?} not in {found:?}");
    }
    assert!(found.join(" ").contains(&desc.value_desc), "{found:?}");
}

#[test]
fn pareto_labels_join_points_at_one_place() {
    let nan = f64::NAN;
    let pts: Vec<(String, f64, f64)> = [("13", 100.0, 41.8), ("15", 65.1, 51.9), ("14", 100.0, 41.8), ("x", nan, 1.0)]
        .iter()
        .map(|&(l, x, y)| (l.to_string(), x, y))
        .collect();
    assert_eq!(pareto_labels(&pts), vec![(0, "13, 14".to_string()), (1, "15".to_string())]);
    let (_tmp, dir) = examples_dir();
    let files = pareto(&dir, "run-pareto", "P", "x", "y", &pts).unwrap();
    let found = svg_texts(&std::fs::read_to_string(&files.svg).unwrap());
    assert!(found.iter().any(|t| t == "13, 14") && !found.iter().any(|t| t == "14"), "{found:?}");
}
