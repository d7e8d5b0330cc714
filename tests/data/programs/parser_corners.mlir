"builtin.module"() ({
  "func.func"() <{sym_name = "main"}> ({
  ^bb0(%a: tensor<f32> loc("x"), %b: tensor<f32>):
    %p:2, %q = "test.multi"(%a, %b) : (tensor<f32>, tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<f32>)
    "cf.br"(%p#1)[^bb1] : (tensor<f32>) -> ()
  ^bb1(%c: tensor<f32>):
    "func.return"(%c, %q) : (tensor<f32>, tensor<f32>) -> ()
  }) : () -> ()
}) : () -> ()
{-# dialect_resources: { builtin: { blob: "0x04000000" } } #-}
