"""Fine-tuning a judge per language: training data from the expert verdicts (data.py), the LoRA
loop (train.py), its memory plan (memory.py), the evaluation of the adapters on the test side
(evaluate.py); the stage is engine/finetune/stage.py."""
