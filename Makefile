# Thin wrapper for Caffe habits: reads Makefile.config and drives CMake, the one
# real build. `make -j2`, `make test`, `make pycaffe`, `make pytest`, `make clean`.
CONFIG_FILE ?= Makefile.config
-include $(CONFIG_FILE)

BUILD_DIR ?= build
on_off = $(if $(filter 1 ON on yes,$(1)),ON,OFF)

CMAKE_FLAGS := -DCMAKE_BUILD_TYPE=Release \
  -DCPU_ONLY=$(call on_off,$(CPU_ONLY)) \
  -DUSE_CUDNN=$(call on_off,$(or $(USE_CUDNN),1)) \
  -DUSE_NCCL=$(call on_off,$(or $(USE_NCCL),1)) \
  -DUSE_MPI=$(call on_off,$(or $(USE_MPI),1)) \
  -DUSE_OPENCV=$(call on_off,$(or $(USE_OPENCV),1)) \
  -DUSE_DNNL=$(call on_off,$(or $(USE_DNNL),1)) \
  -DCUDA_ARCH="$(or $(CUDA_ARCH),90)" \
  -DBLAS=$(or $(BLAS),open) \
  -DBUILD_PYTHON=$(call on_off,$(or $(WITH_PYTHON_LAYER),1))

# Pass -jN through to the CMake build.
JOBS := $(patsubst -j%,%,$(filter -j%,$(MAKEFLAGS)))
ifeq ($(JOBS),)
JOBS := 2
endif

.PHONY: all configure test runtest pycaffe pytest clean
all: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

configure:
	cmake -S . -B $(BUILD_DIR) $(CMAKE_FLAGS)

test runtest: all
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

# Caffe's targets for the Python interface: the module in python/caffe, and its suites.
pycaffe: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target _caffe

pytest: all
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) -R pycaffe

clean:
	rm -rf $(BUILD_DIR)
