package org.ddp4j.optim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A hyper-parameter that would make a scheduler's lr invalid later (StepLR's and MultiStepLR's gamma,
 * CosineAnnealingLR's eta_min) is refused when the scheduler is made (or its state dict loaded), naming the
 * scheduler and the parameter, instead of at some later step as "Invalid learning rate" from the optimizer;
 * gamma 0 stays valid, as in PyTorch (the lr becomes 0).
 */
class LRSchedulerInvalidLrTest {
    private static SGD sgd() {
        return new SGD(List.of(Tensor.zeros(1).requiresGrad(true)), 0.1);
    }

    private static void assertNamesGamma(String scheduler, double gamma, String message) {
        assertTrue(message.startsWith(scheduler + ": gamma must be a finite number >= 0"), message);
        assertTrue(message.contains("got " + gamma + ","), message);
        assertTrue(message.contains("pass a gamma in [0, 1)"), message);
    }

    @ParameterizedTest
    @ValueSource(doubles = {-0.5, Double.NaN, Double.POSITIVE_INFINITY})
    void stepLrRefusesTheGammaAtConstruction(double gamma) {
        try (var scope = Tensors.scope(); SGD opt = sgd()) {
            String message = assertThrows(IllegalArgumentException.class, () -> new StepLR(opt, 1, gamma)).getMessage();
            assertNamesGamma("StepLR", gamma, message);
            assertEquals(0.1, opt.lr(), "a refused scheduler changed the lr");
        }
    }

    @ParameterizedTest
    @ValueSource(doubles = {-0.5, Double.NaN, Double.POSITIVE_INFINITY})
    void multiStepLrRefusesTheGammaAtConstruction(double gamma) {
        try (var scope = Tensors.scope(); SGD opt = sgd()) {
            String message = assertThrows(IllegalArgumentException.class,
                    () -> new MultiStepLR(opt, List.of(1, 3), gamma)).getMessage();
            assertNamesGamma("MultiStepLR", gamma, message);
        }
    }

    @ParameterizedTest
    @ValueSource(doubles = {-0.001, Double.NaN, Double.POSITIVE_INFINITY})
    void cosineAnnealingRefusesAnEtaMinThatIsNotAValidLr(double etaMin) {
        try (var scope = Tensors.scope(); SGD opt = sgd()) {
            String message = assertThrows(IllegalArgumentException.class,
                    () -> new CosineAnnealingLR(opt, 4, etaMin)).getMessage();
            assertTrue(message.startsWith("CosineAnnealingLR: eta_min must be a finite number >= 0"), message);
            assertTrue(message.contains("got " + etaMin + ","), message);
            CosineAnnealingLR good = new CosineAnnealingLR(opt, 4, 0.001);
            Map<String, Object> bad = new HashMap<>(good.stateDict());
            bad.put("eta_min", etaMin);
            message = assertThrows(IllegalArgumentException.class, () -> good.loadStateDict(bad)).getMessage();
            assertTrue(message.startsWith("CosineAnnealingLR.loadStateDict: eta_min must be"), message);
            assertEquals(0.001, good.stateDict().get("eta_min"));
        }
    }

    @Test
    void aStateDictWithANegativeGammaIsRefusedAndChangesNothing() {
        try (var scope = Tensors.scope(); SGD opt = sgd()) {
            StepLR step = new StepLR(opt, 2, 0.5);
            Map<String, Object> bad = new HashMap<>(step.stateDict());
            bad.put("gamma", -2.0);
            bad.put("last_epoch", 7);
            String message = assertThrows(IllegalArgumentException.class, () -> step.loadStateDict(bad)).getMessage();
            assertNamesGamma("StepLR.loadStateDict", -2.0, message);
            assertEquals(0.5, step.stateDict().get("gamma"));
            assertEquals(0, step.lastEpoch());

            MultiStepLR multi = new MultiStepLR(opt, List.of(2), 0.5);
            Map<String, Object> badMulti = new HashMap<>(multi.stateDict());
            badMulti.put("gamma", Double.NaN);
            message = assertThrows(IllegalArgumentException.class, () -> multi.loadStateDict(badMulti)).getMessage();
            assertNamesGamma("MultiStepLR.loadStateDict", Double.NaN, message);
            assertEquals(0.5, multi.stateDict().get("gamma"));
        }
    }

    /** PyTorch 1.13: StepLR(SGD(lr=0.1), 2, gamma=0) gives 0.1, 0.1, 0.0, 0.0; MultiStepLR([1], 0) 0.1, 0.0. */
    @Test
    void gammaZeroDropsTheLrToZeroAsPyTorchDoes() {
        try (var scope = Tensors.scope(); SGD opt = sgd(); SGD other = sgd()) {
            StepLR step = new StepLR(opt, 2, 0.0);
            double[] lrs = new double[4];
            for (int i = 0; i < lrs.length; i++) {
                lrs[i] = step.getLastLr().get(0);
                opt.step();
                step.step();
            }
            assertEquals(List.of(0.1, 0.1, 0.0, 0.0), List.of(lrs[0], lrs[1], lrs[2], lrs[3]));
            MultiStepLR multi = new MultiStepLR(other, List.of(1), 0.0);
            other.step();
            multi.step();
            assertEquals(List.of(0.0), multi.getLastLr());
            assertEquals(0.0, other.lr());
        }
    }
}
