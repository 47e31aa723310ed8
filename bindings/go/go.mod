module github.com/onnxstream/onnxstream/bindings/go

go 1.19
