"""Задание 1 по-русски (grading/assignments/a01.py): Service, его EndpointSlices и завершение пода."""
from grading.build_source import Translation

TRANSLATION = Translation(
    text={
        "862be087": "Задание 1: Service и его EndpointSlices",
        "23bd223b": """
Service не знает своих подов. Он знает только селектор меток (label selector): контроллер EndpointSlice следит,
какие поды попадают под селектор и прошли readiness-пробу, и записывает их адреса в объекты EndpointSlice.
kube-proxy на каждой ноде читает эти слайсы. В этом задании ты соберёшь эту цепочку сам и посмотришь, как она
реагирует на смерть пода.

Сначала запусти ячейку настройки. `lab` — твой кластер; в `checks` лежат проверки, которыми пользуются тесты (их
можно вызывать и самому).""",
        # Exercise 1
        "5a13458e": """
## Упражнение 1: три реплики — три адреса (4 балла)

Напиши манифест, в котором есть
* Deployment `web`: 3 реплики `nginx` (любой тег, например `nginx:1.27`), поды с меткой `app: web`, порт
  контейнера 80 и хук `preStop`, который спит 20 с (у контейнера
  `lifecycle: {preStop: {exec: {command: [sleep, "20"]}}}`; зачем он — объясняет упражнение 3);
* Service `web` типа `ClusterIP` с селектором `app: web` на твоём порту (`task.service_port`) с `targetPort: 80`;
  назови порт своим именем порта (`task.port_name`).

Примени его через `lab.apply(...)` и дождись, пока в слайсах сервиса появятся три готовых адреса.
`lab.wait(lambda l: len(checks.ready_addresses(l, "web")) == 3)` двигает часы кластера, пока это не случится.""",
        "4576740e": """
Вот что печатает `kubectl get endpointslices -l kubernetes.io/service-name=web` (настоящий kubectl, который
ходит в твой кластер). У имени слайса случайный суффикс, как у имени пода.""",
        # Exercise 2
        "786a07a2": """
## Упражнение 2: прочитай слайс сам (1 балл)

Запиши в `addresses` список готовых адресов сервиса `web`, прочитанный из объектов EndpointSlice.
`lab.get("endpointslices", selector="kubernetes.io/service-name=web")` возвращает список слайсов; у каждого есть
`endpoints`, у каждого эндпоинта — `addresses` и `conditions`. Здесь обойдись без `checks`.""",
        # Exercise 3
        "fe38df7f": """
## Упражнение 3: поймай терминирующий эндпоинт (3 балла)

Удали один из подов `web` через `lab.delete("pod", name)`. Вызов возвращается, как только API-сервер принял
запрос. Дальше kubelet запускает хук `preStop` контейнера; когда хук закончится, среда выполнения посылает сигнал
остановки образа (для nginx это SIGQUIT, его мягкое завершение), и простаивающий nginx сразу выходит. Grace period
(`terminationGracePeriodSeconds`, 30 с) — это лишь срок, после которого процесс убивают. Без хука эндпоинт исчез
бы примерно за секунду — и на настоящем кластере тоже, — и поймать его было бы делом случая. Твой `sleep 20` на
20 с задерживает под, который всё ещё обслуживает запросы. Часы стоят, пока ты их не сдвинешь.

1. Запиши в `victim_ip` IP пода, который удаляешь (`pod["status"]["podIP"]`).
2. Удали его.
3. Сразу же запиши в `captured` слайсы сервиса (`lab.get("endpointslices", ...)`).

В `captured` у эндпоинта `victim_ip` должно быть `ready: false, serving: true, terminating: true`. Под уходит,
поэтому новые соединения к нему не идут, пока есть другие готовые эндпоинты, но на readiness-пробу он всё ещё
отвечает. Если бы готовых эндпоинтов не осталось, соединения шли бы и к нему: kube-proxy тогда переходит на
serving-эндпоинты, которые уже завершаются.""",
        # Exercise 4
        "895b378e": """
## Упражнение 4: дай всему улечься (3 балла)

ReplicaSet этого Deployment уже запустил под на замену, с новым IP. Дождись, пока адрес удалённого пода уйдёт из
слайса и снова будут готовы три адреса. Сохрани в `settle_seconds` секунды времени кластера, которые заняло
ожидание (их возвращает `lab.wait`). Как это число соотносится со sleep в `preStop` и с grace period в 30 с?""",
    },
    code={
        "f\"the Service's port is {port['port']} named {port.get('name')!r}; your task asks for port \"":
            "f\"у сервиса порт {port['port']} с именем {port.get('name')!r}, а твоё задание требует порт \"",
        'f"{task.service_port} named {task.port_name!r} (see the task card)"':
            'f"{task.service_port} с именем {task.port_name!r} (см. карточку задания)"',
        '"expected the three ready addresses"': '"ожидались три готовых адреса"',
        '"a pod held by its preStop hook still passes readiness: its endpoint should be serving"':
            '"пока preStop-хук держит под, тот всё ещё проходит readiness-пробу: его эндпоинт должен быть serving"',
        "# The captured object must come from the cluster, not be written by hand.":
            "# Сохранённый объект должен прийти из кластера, а не быть написан вручную.",
        'f"captured {sorted(got)} are not the slices of web ({sorted(names)})"':
            'f"в captured {sorted(got)} — не слайсы web ({sorted(names)})"',
        '"settle_seconds should be the number lab.wait returned"':
            '"в settle_seconds должно быть число, которое вернул lab.wait"',
        "# The pod leaves when its preStop hook ends and nginx quits, not when the 30 s grace period would run out.":
            "# Под уходит, когда кончается его preStop-хук и nginx завершается, а не когда истёк бы grace period в 30 с.",
    },
)
