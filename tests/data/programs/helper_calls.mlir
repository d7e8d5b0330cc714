"builtin.module"() ({
  "func.func"() <{function_type = (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>, sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<2x3xf32>, %arg1: tensor<3x4xf32>):
    %0 = "stablehlo.dot_general"(%arg0, %arg1) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>}> : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    %1 = "func.call"(%0) <{callee = @act}> : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %2 = "stablehlo.constant"() <{value = dense<"0x0000803F"> : tensor<2x4xf32>}> : () -> tensor<2x4xf32>
    %3 = "func.call"(SECOND) <{callee = @act}> : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %4 = "stablehlo.add"(%1, %3) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    "func.return"(%4) : (tensor<2x4xf32>) -> ()
  }) : () -> ()
  "func.func"() <{function_type = (tensor<2x4xf32>) -> tensor<2x4xf32>, sym_name = "act", sym_visibility = "private"}> ({
  ^bb0(%arg0: tensor<2x4xf32>):
    %0 = "stablehlo.tanh"(%arg0) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    "func.return"(%0) : (tensor<2x4xf32>) -> ()
  }) : () -> ()
}) {some.attr = "braces } and ( in a string"} : () -> ()
