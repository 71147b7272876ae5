"""The census's ``keras.applications`` workloads: one small model per family at a tiny input.

``MODELS``: public name -> the side of its square input, the smallest each family accepts
(``InceptionV3`` and ``InceptionResNetV2`` 75, ``Xception`` 71, the rest 32), built with
``weights=None`` (nothing downloaded) and 4 classes, seeded, by each test (``applications``
says why not once per process).  Each has two workloads: the
forward, ``model(x)`` on one image, and ``model.predict`` on a batch of two.  Within a family the
models differ only in their widths and depths, so one stands for its family: a change to
``keras/src/applications/resnet.py`` runs in ``ResNet50`` as in ``ResNet152``.

``PREPROCESS``: each family module's ``preprocess_input`` on the same batch (``resnet50`` is
the ``resnet`` module's alias, ``imagenet_utils`` the function they call).  Not measured:
``decode_predictions`` (it downloads ImageNet's class index, a network call), the other models of
a family (named by ``EXCLUDED``).
"""

from __future__ import annotations

#: public name -> the side of its square RGB input
MODELS: dict[str, int] = {
    "applications.ConvNeXtTiny": 32,
    "applications.DenseNet121": 32,
    "applications.EfficientNetB0": 32,
    "applications.EfficientNetV2B0": 32,
    "applications.InceptionResNetV2": 75,
    "applications.InceptionV3": 75,
    "applications.MobileNet": 32,
    "applications.MobileNetV2": 32,
    "applications.MobileNetV3Small": 32,
    "applications.NASNetMobile": 32,
    "applications.ResNet50": 32,
    "applications.ResNet50V2": 32,
    "applications.VGG16": 32,
    "applications.VGG19": 32,
    "applications.Xception": 71,
}

#: the workloads of each model
KINDS = ("forward", "predict")

#: family module -> its ``preprocess_input``, measured on the census's batch
PREPROCESS = (
    "convnext",
    "densenet",
    "efficientnet",
    "efficientnet_v2",
    "imagenet_utils",
    "inception_resnet_v2",
    "inception_v3",
    "mobilenet",
    "mobilenet_v2",
    "mobilenet_v3",
    "nasnet",
    "resnet",
    "resnet_v2",
    "vgg16",
    "vgg19",
    "xception",
)

#: the other public models -> the model of their family that stands for them (``MODELS``)
STANDS_IN: dict[str, str] = {
    "applications.ConvNeXtBase": "ConvNeXtTiny",
    "applications.ConvNeXtLarge": "ConvNeXtTiny",
    "applications.ConvNeXtSmall": "ConvNeXtTiny",
    "applications.ConvNeXtXLarge": "ConvNeXtTiny",
    "applications.DenseNet169": "DenseNet121",
    "applications.DenseNet201": "DenseNet121",
    "applications.EfficientNetB1": "EfficientNetB0",
    "applications.EfficientNetB2": "EfficientNetB0",
    "applications.EfficientNetB3": "EfficientNetB0",
    "applications.EfficientNetB4": "EfficientNetB0",
    "applications.EfficientNetB5": "EfficientNetB0",
    "applications.EfficientNetB6": "EfficientNetB0",
    "applications.EfficientNetB7": "EfficientNetB0",
    "applications.EfficientNetV2B1": "EfficientNetV2B0",
    "applications.EfficientNetV2B2": "EfficientNetV2B0",
    "applications.EfficientNetV2B3": "EfficientNetV2B0",
    "applications.EfficientNetV2L": "EfficientNetV2B0",
    "applications.EfficientNetV2M": "EfficientNetV2B0",
    "applications.EfficientNetV2S": "EfficientNetV2B0",
    "applications.MobileNetV3Large": "MobileNetV3Small",
    "applications.NASNetLarge": "NASNetMobile",
    "applications.ResNet101": "ResNet50",
    "applications.ResNet101V2": "ResNet50V2",
    "applications.ResNet152": "ResNet50",
    "applications.ResNet152V2": "ResNet50V2",
}

#: public names with no workload of their own, and why
EXCLUDED: dict[str, str] = {
    name: f"a larger model of its family, measured through applications.{model}"
    for name, model in STANDS_IN.items()
}

#: (backend or ``jax-nnx``, workload) -> why Keras fails there with an error other than
#: NotImplementedError
BROKEN: dict[tuple[str, str], str] = {
    ("torch", f"applications.NASNetMobile.{kind}"): "Keras refuses to build NASNet on torch "
    "(ValueError: not available with the torch backend at this time due to an outstanding bug)"
    for kind in KINDS
}
