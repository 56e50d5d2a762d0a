package org.ddp4j.vision.models;

import org.ddp4j.nn.Module;
import org.ddp4j.nn.functional.LinearFunction;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Tensor;

/**
 * Stand-in for org.ddp4j.nn.AdaptiveAvgPool2d(1) until the layers branch lands: the mean over
 * H × W as a product with a row of 1 / (H W), [N, C, H, W] → [N, C, 1, 1].
 */
final class AdaptiveAvgPool2d extends Module {
    AdaptiveAvgPool2d(int outputSize) {
        if (outputSize != 1) {
            throw new IllegalArgumentException("only output size 1 until nn.AdaptiveAvgPool2d lands");
        }
    }

    @Override
    public Tensor forward(Tensor input) {
        long n = input.size(0);
        long c = input.size(1);
        long hw = input.size(2) * input.size(3);
        Tensor rows = input.reshape(n * c, hw);
        Tensor mean = Tensor.full(1.0 / hw, DType.FLOAT32, input.device(), 1, hw);
        return LinearFunction.apply(rows, mean, null).reshape(n, c, 1, 1);
    }
}
