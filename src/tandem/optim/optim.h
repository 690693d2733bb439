#pragma once
// tandem::optim — optimizers, learning-rate schedulers and gradient clipping
// (torch.optim, PyTorch 1.13 semantics), and GradScaler (torch.cuda.amp). Include this one header.
#include "tandem/optim/adagrad.h"
#include "tandem/optim/adam.h"
#include "tandem/optim/clip_grad.h"
#include "tandem/optim/grad_scaler.h"
#include "tandem/optim/lr_scheduler.h"
#include "tandem/optim/optimizer.h"
#include "tandem/optim/rmsprop.h"
#include "tandem/optim/sgd.h"
