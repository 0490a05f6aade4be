// RUN: pp-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{'pp.mesh' op has two axes named "dp"}}
pp.mesh @m [#pp.axis<"dp" = 2, data_replicate>, #pp.axis<"dp" = 2, data_shard>]

// -----

// expected-error @+1 {{'pp.mesh' op has two pipeline axes, "a" and "b"}}
pp.mesh @m [#pp.axis<"a" = 2, pipeline>, #pp.axis<"b" = 2, pipeline>]

// -----

// expected-error @+1 {{'pp.mesh' op needs at least one axis}}
pp.mesh @m []

// -----

// expected-error @+1 {{mesh axis "pp" has size 0; sizes must be at least 1}}
pp.mesh @m [#pp.axis<"pp" = 0, pipeline>]

// -----

// expected-error @+1 {{mesh axis name must not be empty}}
pp.mesh @m [#pp.axis<"" = 2, tensor>]

// -----

// expected-error @+2 {{expected ::pp::AxisKind to be one of: pipeline, data_replicate, data_shard, tensor, context}}
// expected-error @+1 {{failed to parse PP_MeshAxisAttr parameter 'kind'}}
pp.mesh @m [#pp.axis<"x" = 2, expert>]

// -----

// expected-error @+1 {{mesh axis "tp" appears twice in a sharding; an axis shards one dimension or holds one pending sum}}
func.func @axis_twice(%w: tensor<16x8xf32> {pp.sharding = #pp.sharding<[["tp"], ["tp"]]>}) {
  return
}

// -----

// expected-error @+1 {{mesh axis "tp" appears twice in a sharding; an axis shards one dimension or holds one pending sum}}
func.func @sharded_and_partial(%w: tensor<16x8xf32> {pp.sharding = #pp.sharding<[["tp"], []], partial = ["tp"]>}) {
  return
}

// -----

// expected-error @+1 {{the partial axes names axis 3 : i64; axis names are non-empty strings}}
func.func @partial_not_a_name(%w: tensor<16x8xf32> {pp.sharding = #pp.sharding<[[], []], partial = [3]>}) {
  return
}

// -----

// expected-error @+1 {{sharding has 1 block counts for 2 dimensions; give one per dimension}}
func.func @block_counts(%w: tensor<16x8xf32> {pp.sharding = #pp.sharding<[["tp"], []], blocks = [3]>}) {
  return
}

// -----

// expected-error @+1 {{dimension 1 has block count 0; counts are at least 1}}
func.func @no_blocks(%w: tensor<16x8xf32> {pp.sharding = #pp.sharding<[["tp"], []], blocks = [1, 0]>}) {
  return
}

// -----

// expected-error @+1 {{sharding of dimension 0 must be a list of axis names, got "tp"}}
func.func @not_a_list(%w: tensor<16x8xf32> {pp.sharding = #pp.sharding<["tp", []]>}) {
  return
}

// -----

// expected-error @+1 {{sharding of dimension 1 names axis 3 : i64; axis names are non-empty strings}}
func.func @not_a_name(%w: tensor<16x8xf32> {pp.sharding = #pp.sharding<[[], [3]]>}) {
  return
}

// -----

// expected-error @+1 {{'pp.sharding' on argument 0 lists 1 dimensions but 'tensor<16x8xf32>' has rank 2}}
func.func @wrong_rank(%w: tensor<16x8xf32> {pp.sharding = #pp.sharding<[["tp"]]>}) {
  return
}

// -----

// expected-error @+1 {{'pp.sharding' on argument 0 must be a #pp.sharding, got "tp"}}
func.func @wrong_kind(%w: tensor<16x8xf32> {pp.sharding = "tp"}) {
  return
}

// -----

// expected-error @+1 {{'pp.sharding' on argument 0 needs a ranked tensor, got 'f32'}}
func.func @not_a_tensor(%w: f32 {pp.sharding = #pp.sharding<[]>}) {
  return
}

// -----

// expected-error @+1 {{'pp.placement' on result 0 must be a #pp.placement, got 0 : i64}}
func.func @placement_kind() -> (tensor<4xf32> {pp.placement = 0}) {
  %0 = arith.constant dense<0.0> : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{unknown pp attribute 'pp.stages' on argument 0 (expected one of 'pp.name', 'pp.role', 'pp.init', 'pp.stage', 'pp.holder_stages', 'pp.gradient_part', 'pp.sharding', 'pp.placement', 'pp.model_dtype')}}
func.func @unknown_attr(%w: tensor<4xf32> {pp.stages = 1}) {
  return
}

// -----

// expected-error @+1 {{'pp.model_dtype' on argument 0 must be bf16 or f16 (the type a model stores a weight trained as an f32 master copy in), got f64}}
func.func @model_dtype_f64(%w: tensor<4xf32> {pp.model_dtype = f64}) {
  return
}

// -----

// expected-error @+1 {{'pp.gradient_part' on result 0 must be a non-negative integer, got -1 : i64}}
func.func @part_negative(%w: tensor<4xf32>) -> (tensor<4xf32> {pp.name = "w", pp.role = "gradient", pp.gradient_part = -1}) {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{'pp.gradient_part' on result 0 belongs on a value of role 'gradient', not on one of role 'loss'}}
func.func @part_on_loss(%w: tensor<f32>) -> (tensor<f32> {pp.name = "l", pp.role = "loss", pp.gradient_part = 0}) {
  return %w : tensor<f32>
}

// -----

// expected-error @+1 {{'pp.holder_stages' on argument 0 must be an array<i64> of two or more increasing stages, got array<i64: 3, 0>}}
func.func @holders_unordered(%w: tensor<4xf32> {pp.stage = 0, pp.holder_stages = array<i64: 3, 0>}) {
  return
}

// -----

// expected-error @+1 {{'pp.stage' on argument 0 must be an integer, got "one"}}
func.func @stage_not_integer(%w: tensor<4xf32> {pp.stage = "one"}) {
  return
}

// -----

// expected-error @+1 {{'pp.init' on argument 0 must be an elements attribute of type 'tensor<4xf32>', got dense<1.000000e+00> : tensor<2xf32>}}
func.func @init_wrong_type(%w: tensor<4xf32> {pp.init = dense<1.0> : tensor<2xf32>}) {
  return
}

// -----

// expected-error @+1 {{placement lists stage 1 twice}}
func.func @placement_twice(%w: tensor<4xf32> {pp.placement = #pp.placement<stages = [1, 1]>}) {
  return
}

// -----

// expected-error @+1 {{placement stage -1 must not be negative}}
func.func @placement_negative(%w: tensor<4xf32> {pp.placement = #pp.placement<stages = [-1]>}) {
  return
}

// -----

// expected-error @+1 {{placement needs at least one stage}}
func.func @placement_empty(%w: tensor<4xf32> {pp.placement = #pp.placement<stages = []>}) {
  return
}

// -----

// expected-error @+1 {{'pp.init' on argument 0 has type 'tensor<8x8xf32>', not the argument's 'tensor<8x4xf32>'; a sharded argument's whole initial value needs the mesh @pipeline to relate the two}}
func.func @sharded_init_no_mesh(%w: tensor<8x4xf32> {pp.sharding = #pp.sharding<[[], ["tp"]]>, pp.init = dense<1.0> : tensor<8x8xf32>}) {
  return
}

// -----

pp.mesh @pipeline [#pp.axis<"pp" = 2, pipeline>, #pp.axis<"tp" = 2, tensor>]
// expected-error @+1 {{'pp.init' on argument 0 must be the whole tensor 'tensor<8x8xf32>' of which the argument 'tensor<8x4xf32>' is the shard #pp.sharding<[[], ["tp"]]> says, got 'tensor<8x6xf32>'}}
func.func @sharded_init_wrong_whole(%w: tensor<8x4xf32> {pp.sharding = #pp.sharding<[[], ["tp"]]>, pp.init = dense<1.0> : tensor<8x6xf32>}) {
  return
}

// -----

pp.mesh @pipeline [#pp.axis<"pp" = 2, pipeline>, #pp.axis<"tp" = 2, tensor>]
// expected-error @+1 {{'pp.init' on argument 0: dimension 1 of tensor<8x8xf32> (size 8) does not split into 3 block(s) x 2 device(s)}}
func.func @sharded_init_blocks(%w: tensor<8x4xf32> {pp.sharding = #pp.sharding<[[], ["tp"]], blocks = [1, 3]>, pp.init = dense<1.0> : tensor<8x8xf32>}) {
  return
}

// -----

pp.mesh @pipeline [#pp.axis<"pp" = 2, pipeline>, #pp.axis<"tp" = 2, tensor>]
// expected-error @+1 {{'pp.init' on argument 0: sharding #pp.sharding<[[], ["sp"]]> names axis "sp", which the mesh does not have}}
func.func @sharded_init_axis(%w: tensor<8x4xf32> {pp.sharding = #pp.sharding<[[], ["sp"]]>, pp.init = dense<1.0> : tensor<8x8xf32>}) {
  return
}

// -----

// expected-error @+1 {{'pp.mesh' op places stage 2 on rank 2, outside the 2 ranks of pipeline axis "pp"}}
pp.mesh @m [#pp.axis<"pp" = 2, pipeline>] {stage_ranks = array<i64: 0, 1, 2>}

// -----

// expected-error @+1 {{'pp.mesh' op places no stage on rank 1 of pipeline axis "pp"; every rank needs a stage}}
pp.mesh @m [#pp.axis<"pp" = 2, pipeline>] {stage_ranks = array<i64: 0, 0, 0>}

// -----

// expected-error @+1 {{'pp.mesh' op has stage_ranks but no pipeline axis to place the stages on; add one or drop stage_ranks}}
pp.mesh @m [#pp.axis<"dp" = 2, data_replicate>] {stage_ranks = array<i64: 0, 1>}
