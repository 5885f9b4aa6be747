fn main() {
    std::process::exit(compactbench::cli::main());
}
