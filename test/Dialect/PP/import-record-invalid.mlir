// RUN: pp-opt %s -split-input-file -verify-diagnostics

// The import's record of what trains and what it held constant: element
// counts by name, which pp-emit-package and --pp-report read, and what an
// exporter folded a trained tensor from.
module attributes {pp.import_record = {folded = {embedding_1 = "wpe.weight"}, held = {eps = 1 : i64}, trained = {w = 4 : i64}}} {
}

// -----

// expected-error @+1 {{'pp.import_record' must be a dictionary}}
module attributes {pp.import_record = {folded = {embedding_1 = 3 : i64}}} {
}

// -----

// expected-error @+1 {{'pp.import_record' must be a dictionary {trained = {NAME = ELEMENTS : i64, ...}, held = {...}, folded = {NAME = "PARAMETER", ...}} on a module, got {held = {eps = "one"}}}}
module attributes {pp.import_record = {held = {eps = "one"}}} {
}

// -----

// expected-error @+1 {{'pp.import_record' must be a dictionary}}
module attributes {pp.import_record = {frozen = {w = 4 : i64}}} {
}

// -----

// expected-error @+1 {{'pp.import_record' must be a dictionary}}
module attributes {pp.import_record = [1, 2]} {
}

// -----

module {
  // expected-error @+1 {{'pp.import_record' must be a dictionary}}
  func.func @f() attributes {pp.import_record = {}} {
    return
  }
}
