// A two-layer MLP split by hand into two pipeline stages on a 2 x 2 mesh
// (pipeline x data parallel): the shape of what pp-opt --pp-compile produces
// in the whole-program view. The first stage's hidden activation and the
// input (a skip connection) cross the boundary together, by name.
//
//   pp-opt docs/examples/mlp-two-stages.mlir

pp.mesh @world [#pp.axis<"pp" = 2, pipeline>,
                #pp.axis<"dp" = 2, data_replicate>]

func.func @forward(%x: tensor<8x16xf32>,
                   %fc1_weight: tensor<32x16xf32> {pp.placement = #pp.placement<stages = [0]>},
                   %fc1_bias: tensor<32xf32> {pp.placement = #pp.placement<stages = [0]>},
                   %fc2_weight: tensor<16x32xf32> {pp.placement = #pp.placement<stages = [1]>},
                   %labels: tensor<8xi64>) -> tensor<f32> {
  %h = pp.stage @world stage 0 ins(%x, %fc1_weight, %fc1_bias)
      : (tensor<8x16xf32>, tensor<32x16xf32>, tensor<32xf32>) -> tensor<8x32xf32> {
  ^bb0(%in: tensor<8x16xf32>, %w: tensor<32x16xf32>, %b: tensor<32xf32>):
    %y = nn.linear %in, %w, %b
        : (tensor<8x16xf32>, tensor<32x16xf32>, tensor<32xf32>) -> tensor<8x32xf32>
    %a = nn.gelu %y : (tensor<8x32xf32>) -> tensor<8x32xf32>
    pp.yield %a : tensor<8x32xf32>
  }
  %moved:2 = pp.transfer @world %h, %x from 0 to 1 names ["fc1.out", "x"]
      : tensor<8x32xf32>, tensor<8x16xf32>
  %loss = pp.stage @world stage 1 ins(%moved#0, %moved#1, %fc2_weight, %labels)
      : (tensor<8x32xf32>, tensor<8x16xf32>, tensor<16x32xf32>, tensor<8xi64>) -> tensor<f32> {
  ^bb0(%a: tensor<8x32xf32>, %skip: tensor<8x16xf32>, %w: tensor<16x32xf32>, %t: tensor<8xi64>):
    %y = nn.linear %a, %w : (tensor<8x32xf32>, tensor<16x32xf32>) -> tensor<8x16xf32>
    %z = nn.add %y, %skip : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    %l = nn.cross_entropy %z, %t reduction<sum> : (tensor<8x16xf32>, tensor<8xi64>) -> tensor<f32>
    %total = pp.all_reduce @world %l over ["dp"] reduction<sum> : (tensor<f32>) -> tensor<f32>
    pp.yield %total : tensor<f32>
  }
  return %loss : tensor<f32>
}
